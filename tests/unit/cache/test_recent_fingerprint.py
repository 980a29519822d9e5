"""A remembered fingerprint is the fingerprint of the text given, whatever came before."""

from __future__ import annotations

from lsprotocol.types import Position

from cache.keys import ANCHOR_CHARS, LineAnchor, RecentFingerprint, fingerprint
from lsp_server.completion.pipeline import keys_for
from lsp_server.documents.store import DocumentStore
from lsp_server.documents.syntax import syntax_context


def test_each_text_gets_its_own_fingerprint_repeated_or_not() -> None:
    recent = RecentFingerprint()
    texts = ["a", "a", "b", "a", "", "", "x" * 3000, "x" * 3000, "x" * 2999 + "y"]
    assert [recent(t) for t in texts] == [fingerprint(t) for t in texts]


def test_an_anchor_hashed_through_it_is_the_anchor() -> None:
    recent = RecentFingerprint()
    for context in ("def f():\n", "y" * (ANCHOR_CHARS + 5), "def f():\n"):
        plain = LineAnchor.build(language="python", context=context, suffix_fp=7)
        assert LineAnchor.build(language="python", context=context, suffix_fp=7, hasher=recent) == (
            plain
        )


def test_keys_follow_the_context_through_typing_and_back() -> None:
    doc = DocumentStore().open("file:///k.py", "python", 1, "def f(a):\n    x = \n")
    contexts = [
        syntax_context(doc, Position(line=line, character=character))
        for line, character in ((1, 8), (1, 8), (0, 9), (1, 4), (1, 8))
    ]
    first = keys_for(contexts[0])
    assert keys_for(contexts[1]) == first  # the same place again: the same keys
    assert keys_for(contexts[2]) != first and keys_for(contexts[3]) != first
    assert keys_for(contexts[4]) == first
