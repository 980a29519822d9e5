"""The language server: protocol, framing, handlers, settings, lifecycle.

``ScopecacheServer`` and how it is assembled from settings, the LSP handlers
(thin: they delegate), the frame reader, the settings codec, the L2 link,
the trace recorder, the first-use rehearsals and the log records sent to
the client (``client_log``). Builds on ``completion``,
``documents`` and ``observe``.
"""
