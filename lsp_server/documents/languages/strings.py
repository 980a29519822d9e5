"""``StringSyntax``: how a language writes its string literals, and where one is left open.

The confidence gate (``lsp_server.completion.gate``) trims a suggestion cut
inside a string it opened to before that string. Which character opens a
string, what may stand before it and how it ends differ by language, so
each ``LanguageSpec`` carries a ``StringSyntax``:

* **Forms** (``StringForm``): an opening quote with the prefixes allowed
  right before it (Python's ``rb"``, C's ``u8"``, C#'s ``$@"``, Rust's
  ``br#"``; ``any_word`` when any word may: a JavaScript tag, a shell word),
  whether a backslash escapes inside it, whether a doubled quote stands for
  one (C# verbatim), and the long forms: three quotes (Python, Java, C#
  raw), ``#``-fenced raw strings (Rust), delimited raw strings (C++
  ``R"x(...)x"``), long brackets (Lua ``[[...]]``) and a quote that is a
  literal only when it closes one character later (Rust: otherwise it is a
  lifetime or a label).
* **Comments**: past a comment's opener nothing opens a string (Bash's
  ``#`` only where a word starts).
* **Keyword separators**: what joins a name to the string it gives
  (``help="``, ``name: "``), trimmed with the string.

``open_string`` scans one line with these rules. It is a lexer for one
line, not a parser: a string opened on an earlier line (a docstring's
inner lines), interpolations that nest strings of the same quote
(``f"{d["k"]}"``, ``${`...`}``), regular-expression literals (``/'/``),
heredocs, Ruby's ``%q(...)`` and ``?'``, and PHP's ``#`` comments are not
followed.

The serving path reads a document's syntax from its spec
(``SyntaxContext.strings``), an embedder's own languages included.
``STRING_SYNTAX`` (``lsp_server.documents.languages``) holds the shipped
specs' syntaxes by languageId, for what knows only a language's name (a
document whose grammar is not installed, the kit scoring recorded answers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import product


@dataclass(frozen=True, slots=True)
class StringForm:
    """One way a string literal opens and ends."""

    #: the character that opens it (``"``, ``'``, a backtick; ``[`` for long brackets)
    quote: str
    #: what may stand right before the quote, exactly (``""``: nothing)
    prefixes: frozenset[str] = frozenset({""})
    #: a backslash escapes the next character inside it
    escapes: bool = True
    #: a doubled quote inside it stands for one (C# ``@"a""b"``)
    doubled: bool = False
    #: any word may stand before it (a tag, the rest of a shell word): the
    #: prefixes are then matched against the end of that word
    any_word: bool = False
    #: three quotes open a string that three close (Python, Java)
    triple: bool = False
    #: three or more quotes open a raw string that as many close (C# 11)
    triple_raw: bool = False
    #: ``#``s between prefix and quote are repeated after the closing quote (Rust ``r#"``)
    hashes: bool = False
    #: a C++ raw string: ``R"delim(`` ... ``)delim"``
    delimited: bool = False
    #: Lua's long brackets: ``[[`` or ``[==[``, closed by ``]]`` or ``]==]``
    brackets: bool = False
    #: a literal only when it closes right after one character or an escape
    #: (a Rust ``'``; otherwise a lifetime or a label, which opens nothing)
    char_only: bool = False


@dataclass(frozen=True, eq=False)
class StringSyntax:
    """A language's string literals, comments and keyword separators, for ``open_string``."""

    forms: tuple[StringForm, ...]
    #: comment openers and their closers (``""``: to the end of the line)
    comments: tuple[tuple[str, str], ...] = ()
    #: a comment opens only where a word starts (Bash's ``#``, not ``$#``)
    comment_at_word_start: bool = False
    #: characters a prefix may hold besides letters, digits and ``_`` (C#'s ``@$``)
    prefix_chars: str = ""
    #: what joins a keyword to the string it gives (``=`` in ``help="``, ``:`` in ``name: "``)
    separators: tuple[str, ...] = ("=",)
    #: characters a keyword may hold besides letters, digits and ``_`` (Bash's ``--name=``)
    keyword_chars: str = ""
    #: quote -> the forms that open with it, in order (derived)
    by_quote: Mapping[str, tuple[StringForm, ...]] = field(init=False, repr=False)
    #: the first characters of the comment openers (derived)
    comment_starts: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        by_quote: dict[str, tuple[StringForm, ...]] = {}
        for form in self.forms:
            by_quote[form.quote] = (*by_quote.get(form.quote, ()), form)
        object.__setattr__(self, "by_quote", by_quote)
        object.__setattr__(self, "comment_starts", "".join({c[0][0] for c in self.comments}))


def any_case(*prefixes: str) -> frozenset[str]:
    """``prefixes`` in every mix of upper and lower case (Python's ``Rb"``)."""
    return frozenset(
        "".join(letters)
        for prefix in prefixes
        for letters in product(*((c.lower(), c.upper()) for c in prefix))
    )


def plain_forms(quotes: str, prefixes: Iterable[str] = ("",)) -> tuple[StringForm, ...]:
    """One escaped form per quote character, each with ``prefixes``."""
    allowed = frozenset(prefixes)
    return tuple(StringForm(quote, allowed) for quote in quotes)


#: what the gate read before languages had their own: ``"`` and ``'`` after
#: Python's prefixes, no comments, ``=`` as the keyword separator (an
#: unknown language, and a caller that names none)
DEFAULT_STRINGS = StringSyntax(
    forms=plain_forms("\"'", any_case("", "f", "b", "r", "u", "rb", "br", "fr", "rf"))
)


def open_string(text: str, syntax: StringSyntax = DEFAULT_STRINGS) -> tuple[int, int]:
    r"""The string literal ``text`` leaves open: (its opening quote, its start with prefix).

    ``(-1, -1)`` when every string closes, or when ``text`` ends in a
    comment (nothing opens there). A quote after a word that is not one of
    its form's prefixes (``don't``, C++'s ``1'000``) opens nothing, nor does
    a quote escaped outside a string (a shell's ``\'``).
    """
    by_quote, comment_starts = syntax.by_quote, syntax.comment_starts
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        forms = by_quote.get(char)
        if forms is not None:
            end = _literal_end(text, index, forms, syntax)
            if end is None:
                index += 1  # not a string here (a lifetime, an index ``t[``)
                continue
            if end < 0:
                return index, index - _run_before(text, index, syntax.prefix_chars)
            index = end
            continue
        if char in comment_starts:
            end = _comment_end(text, index, syntax)
            if end is not None:
                if end < 0:
                    return -1, -1
                index = end
                continue
        index += 1
    return -1, -1


def word_start(text: str, end: int, extra: str = "") -> int:
    """Where the run of letters, digits, ``_`` and ``extra`` that ends at ``end`` starts."""
    start = end
    while start > 0 and (
        text[start - 1].isalnum() or text[start - 1] == "_" or text[start - 1] in extra
    ):
        start -= 1
    return start


def _run_before(text: str, index: int, extra: str) -> int:
    """How many prefix characters (letters, digits, ``_``, ``extra``) end right before ``index``."""
    return index - word_start(text, index, extra)


def _literal_end(
    text: str, index: int, forms: tuple[StringForm, ...], syntax: StringSyntax
) -> int | None:
    """Where the literal whose quote is at ``index`` ends (-1: open; None: it is no literal)."""
    run = text[index - _run_before(text, index, syntax.prefix_chars) : index]
    for form in forms:
        prefix, hashes = run, 0
        if form.hashes:
            prefix = run.rstrip("#")
            hashes = len(run) - len(prefix)
        elif "#" in run:
            continue
        if form.any_word:
            if not any(prefix.endswith(p) for p in form.prefixes):
                continue
        elif prefix not in form.prefixes:
            continue
        return _form_end(text, index, form, hashes)
    return None


def _form_end(text: str, index: int, form: StringForm, hashes: int) -> int | None:
    """Where the literal of ``form`` opened at ``index`` ends (-1: open; None: no literal)."""
    quote, length = form.quote, len(text)
    if form.char_only:
        if text.startswith("\\", index + 1):
            end = _closing(text, index + 1, quote, escapes=True, doubled=False)
            return end if end >= 0 else None
        if index + 2 < length and text[index + 2] == quote:
            return index + 3
        return None
    if form.brackets:
        level = index + 1
        while level < length and text[level] == "=":
            level += 1
        if level >= length or text[level] != "[":
            return None  # an index or a table constructor, not a long string
        return _closing(text, level + 1, "]" + "=" * (level - index - 1) + "]", False, False)
    if form.delimited:
        paren = text.find("(", index + 1, index + 18)
        if paren < 0:
            return -1  # still in its delimiter
        return _closing(text, paren + 1, ")" + text[index + 1 : paren] + quote, False, False)
    if (form.triple or form.triple_raw) and text.startswith(quote * 3, index):
        if form.triple_raw:
            run = 3
            while index + run < length and text[index + run] == quote:
                run += 1
            return _closing(text, index + run, quote * run, False, False)
        return _closing(text, index + 3, quote * 3, form.escapes, False)
    return _closing(text, index + 1, quote + "#" * hashes, form.escapes, form.doubled)


def _closing(text: str, start: int, closer: str, escapes: bool, doubled: bool) -> int:
    """The index just past ``closer`` from ``start`` on (-1: not there)."""
    if not escapes and not doubled:
        end = text.find(closer, start)
        return end + len(closer) if end >= 0 else -1
    first, length, index = closer[0], len(text), start
    while index < length:
        char = text[index]
        if escapes and char == "\\":
            index += 2
            continue
        if char == first and text.startswith(closer, index):
            if doubled and text.startswith(first, index + 1):
                index += 2  # a doubled quote stands for one
                continue
            return index + len(closer)
        index += 1
    return -1


def _comment_end(text: str, index: int, syntax: StringSyntax) -> int | None:
    """Where the comment opening at ``index`` ends (-1: at the end; None: no comment)."""
    for opener, closer in syntax.comments:
        if not text.startswith(opener, index):
            continue
        if syntax.comment_at_word_start and index > 0 and text[index - 1] not in " \t;&|(":
            return None
        if not closer:
            return -1
        end = text.find(closer, index + len(opener))
        return end + len(closer) if end >= 0 else -1
    return None
