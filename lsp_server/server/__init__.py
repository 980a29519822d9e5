"""The language server: protocol, framing, handlers, settings, lifecycle.

``ScopecacheServer`` and how it is assembled from settings, the LSP handlers
(thin: they delegate), the frame reader, the settings codec, the L2 link,
the trace recorder and the first-use rehearsals. Builds on ``completion``,
``documents`` and ``observe``.
"""
