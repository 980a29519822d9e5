"""initialize, initialized, shutdown and workspace/didChangeConfiguration."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from lsprotocol import types

from lsp_server.server.language_server import ScopecacheServer
from lsp_server.server.settings_codec import settings_from_client

logger = logging.getLogger(__name__)


def register(server: ScopecacheServer) -> None:
    """Register the lifecycle handlers."""

    @server.feature(types.INITIALIZE)
    def initialize(ls: ScopecacheServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        # pygls has already chosen the position encoding from the client's list.
        encoding = ls.workspace.position_encoding
        if encoding is not None:
            ls.documents.position_encoding = types.PositionEncodingKind(encoding)
        ls.configure(settings_from_client(params.initialization_options))

    @server.feature(types.INITIALIZED)
    def initialized(ls: ScopecacheServer, params: types.InitializedParams) -> None:
        ls.start_background()

    @server.feature(types.SHUTDOWN)
    async def shutdown(ls: ScopecacheServer, params: Any) -> None:
        await ls.close()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(
        ls: ScopecacheServer, params: types.DidChangeConfigurationParams
    ) -> None:
        data = settings_from_client(params.settings)
        if data is None:
            logger.debug("didChangeConfiguration without settings object ignored")
            return
        ls.configure(data, base=ls.settings)
