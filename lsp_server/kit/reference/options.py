"""The reference service's command-line options (the ``scopecache upstream`` contract).

Kept apart from ``cli`` (which imports hypercorn and the app) so that
``scopecache`` can declare the ``upstream`` subcommand without loading the
service.
"""

from __future__ import annotations

import argparse

#: the port ``scopecache upstream`` listens on unless told otherwise
DEFAULT_PORT = 8443
#: the corpus stops growing at this many megabytes of text (``--corpus-limit-mb``)
DEFAULT_CORPUS_LIMIT_MB = 16.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the service's options on ``p``."""
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"TCP port (default {DEFAULT_PORT}; 0 picks a free port)",
    )  # fmt: skip
    p.add_argument("--tls-self-signed", metavar="DIR", help="serve TLS; write ca.pem to DIR")
    p.add_argument("--corpus", nargs="*", default=[], metavar="PATH", help="files or directories")
    p.add_argument(
        "--corpus-limit-mb", type=float, default=DEFAULT_CORPUS_LIMIT_MB, metavar="MB",
        help=f"stop reading the corpus after this much text (default {DEFAULT_CORPUS_LIMIT_MB:g})",
    )  # fmt: skip
    p.add_argument("--ttft-ms", type=float, default=0.0, help="emulated time to first token")
    p.add_argument("--token-ms", type=float, default=0.0, help="emulated time per token")
    p.add_argument("--port-file", metavar="FILE", help="write the bound port here when ready")
    p.add_argument("--require-key-env", metavar="ENV", help="require this env var's bearer key")
    p.add_argument("--log-level", default="WARNING")
    p.add_argument(
        "--http1-only",
        action="store_true",
        help="speak HTTP/1.1 only, like llama.cpp, vLLM and Ollama: the HTTP/2 preface "
        "is answered with 400 and a closed connection, TLS offers only http/1.1",
    )
    p.add_argument(
        "--close-after-stream",
        action="store_true",
        help="close the TCP connection after every streamed response, as llama-server does",
    )
    p.add_argument(
        "--keep-alive-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="close idle connections after SECONDS and announce it in a Keep-Alive header "
        "on HTTP/1.1 (default: 300, no header)",
    )
    p.add_argument(
        "--identify-as", choices=("openai", "llamacpp", "ollama"), default="openai",
        help="answer identification like that server: llamacpp adds GET /props, "
        "ollama adds GET /api/version and /api/tags",
    )
