"""The framework floor: a bare pygls server answering every inline request with a constant.

``scopecache``'s hit round trip is measured against this, over the same
stdio framing and client, so the ratio shows what our work adds to pygls's.
"""

from __future__ import annotations

import sys

from lsprotocol import types
from pygls.lsp.server import LanguageServer

server = LanguageServer("floor", "1")
ANSWER = types.InlineCompletionList(items=[types.InlineCompletionItem(insert_text="constant")])


@server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
def inline(params: types.InlineCompletionParams) -> types.InlineCompletionList:
    return ANSWER


@server.feature("scopecache/stats")
def stats(params: object) -> dict[str, int]:
    return {}


if __name__ == "__main__":
    # accept (and ignore) the serve options the driver passes
    server.start_io(sys.stdin.buffer, sys.stdout.buffer)
