"""``python -m transport.reference``: run the reference completion service."""

from __future__ import annotations

import sys

from transport.reference.cli import main

sys.exit(main())
