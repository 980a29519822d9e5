"""``python -m lsp_server`` is ``scopecache``."""

import sys

from lsp_server.cli import main

sys.exit(main())
