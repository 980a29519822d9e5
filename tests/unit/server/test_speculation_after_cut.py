"""No prefetch of the next line after a suggestion the gate cut inside its line.

The speculative prefetch after a shown suggestion fetches the state after
accepting it and pressing Enter. A suggestion the confidence bar cut in the
middle of its first line does not end the line (the model went on, unsure),
so that state is one the user does not reach: in the slow-model sessions such
prefetches asked for the line after ``for attempt`` or
``wait = retry_after_seconds(exc``. The server runs in process with a backend
at the transport seam that gives each token a probability.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from lsprotocol import types

from lsp_server import create_server
from lsp_server.completion.pipeline import cut_in_first_line
from tests.support.conditions import until
from tests.unit.server.test_immediate_route import INLINE, Editor
from transport.backend import CompletionBackend, CompletionRequest, ScoredText

CUT_URI = "file:///work/project/cut.py"
CUT_TEXT = "def greet(name):\n    message = "
#: the model is unsure from " name" on: the onward bar (0.6) cuts it there
CUT_ANSWER = [('"Hello, "', 0.9), (" +", 0.95), (" name", 0.3), (".title()", 0.9)]
WHOLE_URI = "file:///work/project/whole.py"
WHOLE_TEXT = "def area(width, height):\n    result = "
WHOLE_ANSWER = [("width", 0.95), (" * height", 0.9)]
NEXT_LINE = [("return result", 0.9)]


class ScoredBackend(CompletionBackend):
    """Answers by the document's text, each token with the probability the model gave it."""

    def __init__(self) -> None:
        self.calls: list[CompletionRequest] = []

    async def stream(self, request: CompletionRequest) -> AsyncIterator[str]:
        self.calls.append(request)
        if request.prefix.endswith(CUT_TEXT):
            tokens = CUT_ANSWER
        elif request.prefix.endswith(WHOLE_TEXT):
            tokens = WHOLE_ANSWER
        else:
            tokens = NEXT_LINE  # a prefetch of the line after
        for text, probability in tokens:
            yield ScoredText(text, probability) if request.probabilities else text


def params(uri: str, text: str) -> dict[str, Any]:
    line = text.count("\n")
    return {
        "textDocument": {"uri": uri},
        "position": {"line": line, "character": len(text.split("\n")[-1])},
        "context": {"triggerKind": 2},
    }


async def shown(editor: Editor, uri: str, text: str) -> str:
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    editor.notify(types.TEXT_DOCUMENT_DID_OPEN, {"textDocument": document})
    answer = await editor.answer(editor.request(INLINE, params(uri, text)))
    return str(answer["result"]["items"][0]["insertText"])


async def test_a_suggestion_cut_inside_its_line_fetches_no_line_after_it() -> None:
    backend = ScoredBackend()
    editor = Editor(create_server(backend=backend))
    await editor.start()
    options = {"speculative": {"enabled": True}, "cache": {"l2": "none"}}
    editor.notify(types.WORKSPACE_DID_CHANGE_CONFIGURATION, {"settings": {"scopecache": options}})

    assert await shown(editor, CUT_URI, CUT_TEXT) == '"Hello, " +'
    # a whole line shown next, in another document: its prefetch follows
    assert await shown(editor, WHOLE_URI, WHOLE_TEXT) == "width * height"

    def prefetched(text: str) -> bool:
        return any(call.prefix.startswith(text) and call.prefix != text for call in backend.calls)

    async def whole_line_prefetched() -> bool:
        return prefetched(WHOLE_TEXT + "width * height\n")

    await until(whole_line_prefetched, "the whole line's prefetch")
    assert not prefetched(CUT_TEXT)  # nothing asked after the cut one
    assert len(backend.calls) == 3


def test_a_cut_inside_the_first_line_is_told_from_a_whole_line() -> None:
    assert cut_in_first_line('"Hello, " +', '"Hello, " + name.title()')
    assert not cut_in_first_line("width * height", "width * height")
    # a block cut at the end of a line: the first line is whole
    assert not cut_in_first_line("if x:\n    y = 1", "if x:\n    y = 1\n    z = 2")
    assert not cut_in_first_line("if x:", "if x:\n    y = 1")
    assert cut_in_first_line("if", "if x:\n    y = 1")
