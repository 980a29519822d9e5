from __future__ import annotations

import pytest
from lsprotocol.types import Position, Range, TextDocumentContentChangePartial

from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.document import Document
from lsp_server.documents.prompt_window import StalePromptError, block_size, estimate_tokens
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import SyntaxContext, completion_context, syntax_context
from lsp_server.documents.windows import DEFAULT_WINDOWS
from lsp_server.settings import CompletionSettings, PromptWindowKind
from transport.prompt import fit_prompt

URI = "file:///work/big.py"
PREFIX_CHARS = 1500
PREFIX_LINES = 120


def function(n: int) -> str:
    return (
        f"def step_{n}(values, scale):\n"
        f"    total = 0\n"
        f"    for value in values:\n"
        f"        total += value * scale + {n}\n"
        f"    return total\n"
        f"\n\n"
    )


SOURCE = "import math\n\n\n" + "".join(function(n) for n in range(120))

NEW_CODE = (
    "def report(rows):\n"
    "    lines = []\n"
    "    for row in rows:\n"
    "        name, amount = row\n"
    "        lines.append(f'{name}: {amount:.2f}')\n"
    "    summary = sum(amount for _, amount in rows)\n"
    "    lines.append(f'total: {summary}')\n"
    "    return '\\n'.join(lines)\n"
) * 6


@pytest.fixture
def store() -> DocumentStore:
    return DocumentStore()


def end_of(doc: Document) -> Position:
    text = doc.text
    return Position(line=text.count("\n"), character=len(text) - (text.rfind("\n") + 1))


def type_char(store: DocumentStore, doc: Document, pos: Position, char: str) -> Position:
    store.change(
        doc.uri,
        doc.version + 1,
        [TextDocumentContentChangePartial(range=Range(start=pos, end=pos), text=char)],
    )
    if char == "\n":
        return Position(line=pos.line + 1, character=0)
    return Position(line=pos.line, character=pos.character + 1)


def context(doc: Document, pos: Position, kind: PromptWindowKind = "anchored") -> SyntaxContext:
    return syntax_context(
        doc, pos, DEFAULT_WINDOWS._replace(prefix_chars=PREFIX_CHARS, prefix_lines=PREFIX_LINES,
                                 prompt=kind)
    )


def typing_session(
    store: DocumentStore, kind: PromptWindowKind, prefix_limit: int | None = None
) -> list[SyntaxContext]:
    """Type NEW_CODE at the end of a file larger than the budget, one character at a time.

    Every keystroke is a miss: its prompt is read before the next one, with
    the backend's ``prefix_limit``.
    """
    doc = store.open(URI, "python", 1, SOURCE)
    pos = end_of(doc)
    contexts = []
    for char in NEW_CODE:
        pos = type_char(store, doc, pos, char)
        ctx = context(doc, pos, kind)
        ctx.prompt.texts(prefix_limit)
        contexts.append(ctx)
    return contexts


def moves(contexts: list[SyntaxContext]) -> int:
    """Requests whose prompt prefix is not the previous one with text added at its end."""
    return sum(
        not new.prompt_prefix.startswith(old.prompt_prefix)
        for old, new in zip(contexts, contexts[1:], strict=False)
    )


def test_anchored_prefix_only_grows_at_its_end_between_block_steps(store: DocumentStore) -> None:
    contexts = typing_session(store, "anchored")
    # a step moves the start by a power of two lines, at most a quarter of the
    # window: here 8 lines of about 21 characters
    assert moves(contexts) <= len(NEW_CODE) // (8 * 20) + 1
    # long runs of keystrokes send byte-identical text ahead of the cursor
    runs: list[int] = []
    run = 1
    for old, new in zip(contexts, contexts[1:], strict=False):
        if new.prompt_prefix.startswith(old.prompt_prefix):
            run += 1
        else:
            runs.append(run)
            run = 1
    runs.append(run)
    # the first and last runs are cut by the session's start and end
    assert len(runs) >= 3
    assert min(runs[1:-1]) > 100


def test_todays_sliding_window_moves_on_almost_every_keystroke(store: DocumentStore) -> None:
    contexts = typing_session(store, "sliding")
    assert moves(contexts) > 0.9 * len(contexts)


def test_anchored_prefix_respects_the_budget_and_starts_at_a_line(store: DocumentStore) -> None:
    for ctx in typing_session(store, "anchored"):
        assert len(ctx.prompt_prefix) <= PREFIX_CHARS
        assert ctx.prompt_prefix.count("\n") <= PREFIX_LINES
        head = store.get(URI)
        assert head is not None
        before = head.text[: ctx.offset]
        assert before.endswith(ctx.prompt_prefix)
        start = len(before) - len(ctx.prompt_prefix)
        assert start == 0 or before[start - 1] == "\n"


def test_anchored_prefix_uses_most_of_its_budget(store: DocumentStore) -> None:
    contexts = typing_session(store, "anchored")
    # a step gives up at most a quarter of the lines the budget holds
    assert min(len(c.prompt_prefix) for c in contexts) > PREFIX_CHARS * 0.7


def test_the_anchored_prefix_keeps_within_the_backends_limit_so_its_start_is_its_own(
    store: DocumentStore,
) -> None:
    # llama.cpp's backend sends fewer prefix characters than prefixChars: a
    # longer prefix would be cut at its start in the backend's own steps
    limit = PREFIX_CHARS * 2 // 3
    contexts = typing_session(store, "anchored", prefix_limit=limit)
    for ctx in contexts:
        assert fit_prompt(ctx.prompt_prefix, "", limit, 0, pooled=False)[0] == ctx.prompt_prefix
    assert min(len(c.prompt_prefix) for c in contexts) > limit * 0.7
    # the window at the budget it is sent with moves its start far less often
    # than a larger window cut by the backend
    store.close(URI)
    cut_by_the_backend = [
        fit_prompt(ctx.prompt_prefix, "", limit, 0, pooled=False)[0]
        for ctx in typing_session(store, "anchored")
    ]
    their_moves = sum(
        not new.startswith(old)
        for old, new in zip(cut_by_the_backend, cut_by_the_backend[1:], strict=False)
    )
    assert moves(contexts) <= len(NEW_CODE) // (8 * 20) + 1 < their_moves


def test_deleting_after_a_step_does_not_step_back(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    pos = end_of(doc)
    before = context(doc, pos).prompt_prefix
    while True:
        pos = type_char(store, doc, pos, "x")
        after = context(doc, pos).prompt_prefix
        if not after.startswith(before):
            break
        before = after
    store.change(
        doc.uri,
        doc.version + 1,
        [
            TextDocumentContentChangePartial(
                range=Range(start=Position(line=pos.line, character=pos.character - 1), end=pos),
                text="",
            )
        ],
    )
    pos = Position(line=pos.line, character=pos.character - 1)
    assert after.startswith(context(doc, pos).prompt_prefix)


def test_returning_to_an_earlier_function_sends_the_same_window_again(
    store: DocumentStore,
) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    here = end_of(doc)
    earlier = Position(line=SOURCE[: SOURCE.index("def step_40")].count("\n") + 3, character=8)
    first_visit = context(doc, earlier).prompt_prefix
    assert context(doc, here).prompt_prefix != first_visit
    assert context(doc, earlier).prompt_prefix == first_visit
    assert len(first_visit) > PREFIX_CHARS / 2


def test_a_keystroke_that_never_asks_for_its_prompt_does_not_read_it(
    store: DocumentStore,
) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    ctx = context(doc, end_of(doc))
    assert not ctx.prompt.is_read
    assert ctx.prompt_prefix == doc.text[-len(ctx.prompt_prefix) :]
    assert ctx.prompt.is_read


def test_a_prompt_asked_for_after_the_document_changed_is_refused(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    pos = end_of(doc)
    unread = context(doc, pos)
    read = context(doc, pos)
    sent = read.prompt_prefix
    type_char(store, doc, pos, "x")
    with pytest.raises(StalePromptError, match="read after 1 more edit"):
        unread.prompt.texts()
    assert read.prompt_prefix == sent  # read before the edit: kept as it was


def test_the_step_is_a_power_of_two_within_a_quarter_of_the_window() -> None:
    assert block_size(120, 100) == 16
    assert block_size(120, 31) == 4
    assert block_size(8, 100) == 2
    assert block_size(120, 2) == 1
    assert block_size(1000, 1000) == 32


def test_a_line_longer_than_the_budget_is_cut_mid_line(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE + "x = '" + "y" * 5000)
    ctx = context(doc, end_of(doc))
    assert ctx.prompt_prefix == "y" * PREFIX_CHARS


@pytest.mark.parametrize("kind", ["anchored", "sliding", "lines", "tokens"])
def test_the_prompt_window_never_changes_the_cache_key(
    store: DocumentStore, kind: PromptWindowKind
) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    pos = Position(line=200, character=8)
    assert keys_for(context(doc, pos, kind)) == keys_for(context(doc, pos, "sliding"))


def test_lines_window_sends_256_lines_before_and_64_after(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    ctx = context(doc, Position(line=500, character=0), "lines")
    assert ctx.prompt_prefix.count("\n") == 256
    assert ctx.prompt_suffix.count("\n") == 64


def test_tokens_window_prunes_whole_lines_to_its_token_budget(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE)
    ctx = context(doc, Position(line=500, character=4), "tokens")
    budget = (PREFIX_CHARS + 1000) // 4
    assert estimate_tokens(ctx.prompt_prefix) + estimate_tokens(ctx.prompt_suffix) <= budget
    assert ctx.prompt_prefix.startswith(("def", "    ", "\n"))
    assert ctx.prompt_suffix.endswith("\n")


BIG_FUNCTION = (
    "def big(values):\n"
    "    total = 0\n"
    + "".join(f"    total += values[{n}] * {n}\n" for n in range(40))
    + "    return total\n"
)


def test_a_prefix_first_suffix_is_kept_to_whole_lines_within_its_budget(
    store: DocumentStore,
) -> None:
    doc = store.open(URI, "python", 1, SOURCE + BIG_FUNCTION)
    inside = Position(line=SOURCE.count("\n") + 2, character=4)
    whole = syntax_context(doc, inside, DEFAULT_WINDOWS._replace(
        prefix_chars=PREFIX_CHARS, suffix_chars=1000, prompt_suffix_chars=0
    ))
    capped = syntax_context(doc, inside, DEFAULT_WINDOWS._replace(
        prefix_chars=PREFIX_CHARS, suffix_chars=1000, prompt_suffix_chars=100
    ))
    assert len(whole.prompt_suffix) > 500
    assert whole.prompt_suffix.startswith(capped.prompt_suffix)
    assert len(capped.prompt_suffix) <= 100
    assert capped.prompt_suffix.endswith("\n")
    # the next whole line would not have fitted
    next_line = whole.prompt_suffix[len(capped.prompt_suffix) :].split("\n", 1)[0] + "\n"
    assert len(capped.prompt_suffix) + len(next_line) > 100
    # the cache key reads the whole scope suffix, not the prompt's
    assert capped.suffix == whole.suffix
    assert keys_for(capped) == keys_for(whole)


def test_a_prefix_first_suffix_stays_the_same_while_typing(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE + BIG_FUNCTION)
    pos = Position(line=SOURCE.count("\n") + 1, character=len("    total = 0"))
    suffixes = set()
    for char in " + 1":
        pos = type_char(store, doc, pos, char)
        ctx = syntax_context(doc, pos, DEFAULT_WINDOWS._replace(
            prefix_chars=PREFIX_CHARS, suffix_chars=1000, prompt_suffix_chars=100
        ))
        suffixes.add(ctx.prompt_suffix)
    assert len(suffixes) == 1


def test_only_the_anchored_window_caps_the_suffix(store: DocumentStore) -> None:
    doc = store.open(URI, "python", 1, SOURCE + BIG_FUNCTION)
    inside = Position(line=SOURCE.count("\n") + 2, character=4)
    for kind in ("sliding", "lines", "tokens"):
        whole = syntax_context(doc, inside, DEFAULT_WINDOWS._replace(
            prefix_chars=PREFIX_CHARS, prompt=kind, prompt_suffix_chars=0
        ))
        capped = syntax_context(doc, inside, DEFAULT_WINDOWS._replace(
            prefix_chars=PREFIX_CHARS, prompt=kind, prompt_suffix_chars=100
        ))
        assert capped.prompt_suffix == whole.prompt_suffix


def test_suffix_first_prompts_keep_the_whole_suffix() -> None:
    store = DocumentStore()
    doc = store.open(URI, "python", 1, SOURCE + BIG_FUNCTION)
    inside = Position(line=SOURCE.count("\n") + 2, character=4)
    psm = completion_context(doc, inside, CompletionSettings(psm_suffix_chars=100))
    spm = completion_context(
        doc, inside, CompletionSettings(psm_suffix_chars=100, fim_order="spm")
    )
    assert len(psm.prompt_suffix) <= 100 < len(spm.prompt_suffix)
