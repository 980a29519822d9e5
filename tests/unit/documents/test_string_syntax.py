"""Each language's string literals, read one line at a time: where a string is left open."""

from __future__ import annotations

import pytest

from lsp_server.documents.languages import SPECS, STRING_SYNTAX
from lsp_server.documents.languages.strings import DEFAULT_STRINGS, open_string


def opened(language: str, line: str) -> str | None:
    """The open string's text from its start (prefix included), or None when none is open."""
    _, start = open_string(line, STRING_SYNTAX[language])
    return None if start < 0 else line[start:]


def test_every_shipped_language_says_how_it_writes_strings() -> None:
    for spec in SPECS:
        assert spec.strings is not DEFAULT_STRINGS, spec.name
        for language_id in spec.language_ids:
            assert STRING_SYNTAX[language_id.lower()] is spec.strings


@pytest.mark.parametrize(
    ("language", "line", "open_part"),
    [
        # Rust: a quote is a char literal only when it closes a character later
        ("rust", "fn parse<'a>(input: &'a str) -> ", None),
        ("rust", "fn parse<'", None),
        ("rust", "'outer: loop { break 'outer; }", None),
        ("rust", "let q = '\"'; let s = \"ab", '"ab'),  # the char literal holds a quote
        ("rust", "let q = '\\''; let s = b\"ab", 'b"ab'),
        ("rust", 'let re = r#"say "hi"', 'r#"say "hi"'),  # a raw string ends at "#
        ("rust", 'let re = r#"say "hi""#; let t = "', '"'),
        # JavaScript and TypeScript: template literals, tagged or not
        ("javascript", "const m = `Hello ${name", "`Hello ${name"),
        ("typescript", "const q = sql`SELECT 'x", "sql`SELECT 'x"),
        ("typescriptreact", "<p>Don't stop</p>", None),
        ("javascript", "x = 1 // it's \"done", None),
        # Go: raw strings in backticks have no escapes
        ("go", 's := `C:\\` + "x', '"x'),
        ("go", "r := '\"'; s := `raw", "`raw"),
        # C and C++: encoding prefixes (case matters), raw strings, digit separators
        ("c", 'wchar_t *s = L"wide', 'L"wide'),
        ("c", "int c = u8'", "u8'"),
        ("cpp", 'auto s = R"x(say ")" still)x" + u"', 'u"'),
        ("cpp", 'auto s = R"x(say ")', 'R"x(say ")'),
        ("cpp", "int n = 1'000'000;", None),
        # C#: verbatim (doubled quotes, no escapes), interpolated, raw
        ("csharp", 'var p = @"C:\\dir\\', '@"C:\\dir\\'),
        ("csharp", 'var p = @"say ""hi"" now', '@"say ""hi"" now'),
        ("csharp", 'var s = $@"{a}\\', '$@"{a}\\'),
        ("csharp", 'var s = """a " b', '"""a " b'),
        ("csharp", 'var s = """a " b"""; var t = $"', '$"'),
        # Python: prefixes in any case, three quotes, comments
        ("python", 'x = Rb"\\d', 'Rb"\\d'),
        ("python", 'doc = """say "hi" and', '"""say "hi" and'),
        ("python", "x = 1  # don't \"stop", None),
        # Bash: a quote anywhere in a word, $'..' with escapes, '..' without
        ("shellscript", "echo $'it\\'s", "$'it\\'s"),
        ("shellscript", "echo 'a\\' b", None),
        ("shellscript", "echo it\\'s", None),
        ("shellscript", 'echo ${#arr[@]} "x', '"x'),
        ("shellscript", "ls # it's", None),
        # Lua: long brackets, but not an index
        ("lua", "local s = [==[a]]b", "[==[a]]b"),
        ("lua", 'local v = t[1] .. "x', '"x'),
        ("lua", "x = 1 -- don't", None),
        # PHP and Ruby
        ("php", "$s = b'bin", "b'bin"),
        ("ruby", "puts `ls", "`ls"),
    ],
)
def test_the_string_a_line_leaves_open(language: str, line: str, open_part: str | None) -> None:
    assert opened(language, line) == open_part
