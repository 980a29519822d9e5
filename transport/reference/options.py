"""The reference service's command-line options (the ``scopecache upstream`` contract).

Kept apart from ``cli`` (which imports hypercorn and the app) so that
``scopecache`` can declare the ``upstream`` subcommand without loading the
service.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the service's options on ``p``."""
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8443, help="0 picks a free port")
    p.add_argument("--tls-self-signed", metavar="DIR", help="serve TLS; write ca.pem to DIR")
    p.add_argument("--corpus", nargs="*", default=[], metavar="PATH", help="files or directories")
    p.add_argument("--ttft-ms", type=float, default=0.0, help="emulated time to first token")
    p.add_argument("--token-ms", type=float, default=0.0, help="emulated time per token")
    p.add_argument("--port-file", metavar="FILE", help="write the bound port here when ready")
    p.add_argument("--require-key-env", metavar="ENV", help="require this env var's bearer key")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument(
        "--identify-as", choices=("openai", "llamacpp", "ollama"), default="openai",
        help="answer identification like that server: llamacpp adds GET /props, "
        "ollama adds GET /api/version and /api/tags",
    )
