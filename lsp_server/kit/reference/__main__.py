"""``python -m lsp_server.kit.reference``: run the reference completion service."""

from __future__ import annotations

import sys

from lsp_server.kit.reference.cli import main

sys.exit(main())
