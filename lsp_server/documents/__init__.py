"""The open documents and what is read from them.

Documents and their edits, positions in the negotiated encoding, the
languages and their tree-sitter grammars, the syntax context at a cursor,
and which documents are excluded. Imports nothing else of ``lsp_server``
but the settings model.
"""
