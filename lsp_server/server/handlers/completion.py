"""textDocument/completion: the suggestion as one list item, for clients without ghost text."""

from __future__ import annotations

import re

from lsprotocol import types

from lsp_server.documents.positions import character_column, encode_text
from lsp_server.server.handlers.inline import ACCEPT_COMMAND
from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.suggestions import suggest

_WORD_TAIL = re.compile(r"[A-Za-z0-9_]*$")


def register(server: ScopecacheServer) -> None:
    """Register the list completion handler."""

    @server.feature(
        types.TEXT_DOCUMENT_COMPLETION,
        types.CompletionOptions(trigger_characters=[".", "(", " "]),
    )
    async def completion(
        ls: ScopecacheServer, params: types.CompletionParams
    ) -> types.CompletionList:
        invoked = (
            params.context is not None
            and params.context.trigger_kind == types.CompletionTriggerKind.Invoked
        )
        result = await suggest(
            ls, params.text_document.uri, params.position, automatic=not invoked, method="list"
        )
        if result is None:
            return types.CompletionList(is_incomplete=True, items=[])
        suggestion, item_id, ctx = result
        # Clients filter items by the word before the cursor: make the edit
        # replace that word so the item is not filtered away.
        word = _WORD_TAIL.search(ctx.line_prefix)
        typed = word.group(0) if word else ""
        width = character_column(encode_text(typed), ls.documents.position_encoding)
        start = types.Position(line=ctx.line, character=ctx.character - width)
        end = types.Position(line=ctx.line, character=ctx.character)
        first_line = suggestion.text.split("\n", 1)[0].strip() or suggestion.text.strip()
        item = types.CompletionItem(
            label=(typed + first_line)[:80],
            kind=types.CompletionItemKind.Text,
            detail=f"scopecache ({suggestion.source})",
            filter_text=typed + suggestion.text,
            text_edit=types.TextEdit(
                range=types.Range(start=start, end=end), new_text=typed + suggestion.text
            ),
            insert_text_format=types.InsertTextFormat.PlainText,
            command=types.Command(
                title="Accept",
                command=ACCEPT_COMMAND,
                arguments=[item_id, {"source": suggestion.source}],
            ),
            sort_text="0",
        )
        return types.CompletionList(is_incomplete=True, items=[item])
