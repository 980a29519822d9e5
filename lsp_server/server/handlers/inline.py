"""textDocument/inlineCompletion (LSP 3.18): ghost text at the cursor."""

from __future__ import annotations

from lsprotocol import types

from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.suggestions import suggest

ACCEPT_COMMAND = "scopecache.accepted"


def register(server: ScopecacheServer) -> None:
    """Register the inline completion handler."""

    @server.feature(types.TEXT_DOCUMENT_INLINE_COMPLETION, types.InlineCompletionOptions())
    async def inline_completion(
        ls: ScopecacheServer, params: types.InlineCompletionParams
    ) -> types.InlineCompletionList:
        automatic = params.context.trigger_kind == types.InlineCompletionTriggerKind.Automatic
        result = await suggest(ls, params.text_document.uri, params.position, automatic=automatic)
        if result is None:
            return types.InlineCompletionList(items=[])
        suggestion, item_id, ctx = result
        cursor = types.Position(line=ctx.line, character=ctx.character)
        item = types.InlineCompletionItem(
            insert_text=suggestion.text,
            range=types.Range(start=cursor, end=cursor),
            command=types.Command(
                title="Accept",
                command=ACCEPT_COMMAND,
                arguments=[item_id, {"source": suggestion.source}],
            ),
        )
        return types.InlineCompletionList(items=[item])
