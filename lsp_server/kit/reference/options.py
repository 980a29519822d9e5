"""The reference service's command-line options (the ``scopecache upstream`` contract).

Kept apart from ``cli`` (which imports hypercorn and the app) so that
``scopecache`` can declare the ``upstream`` subcommand without loading the
service.
"""

from __future__ import annotations

import argparse

from lsp_server.kit.reference.tls import TLS_EXTRA_INSTALL

#: the port ``scopecache upstream`` listens on unless told otherwise
DEFAULT_PORT = 8443
#: the corpus stops growing at this many megabytes of text (``--corpus-limit-mb``)
DEFAULT_CORPUS_LIMIT_MB = 16.0
#: what ``--help`` says of the exit codes
EPILOG = (
    "exit codes: 0 stopped by SIGINT or SIGTERM; 1 cannot listen on --host and --port; "
    "2 bad usage (an unset --require-key-env variable, --corpus-limit-mb not above 0, "
    f"--tls-self-signed without the tls extra: {TLS_EXTRA_INSTALL})"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declare the service's options on ``p``."""
    p.add_argument(
        "--host", default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1, loopback only)",
    )  # fmt: skip
    p.add_argument(
        "--port", type=int, default=DEFAULT_PORT,
        help=f"TCP port (default: {DEFAULT_PORT}; 0 picks a free port)",
    )  # fmt: skip
    p.add_argument(
        "--tls-self-signed", metavar="DIR",
        help="serve TLS with a self-signed CA kept in DIR (writes DIR/ca.pem for clients to "
        f"trust; needs the tls extra: {TLS_EXTRA_INSTALL}); default: none, cleartext "
        "HTTP (h2c and HTTP/1.1)",
    )  # fmt: skip
    p.add_argument(
        "--corpus", nargs="*", default=[], metavar="PATH",
        help="files or directories whose text the service completes from (default: none: "
        "an empty corpus, every answer is empty)",
    )  # fmt: skip
    p.add_argument(
        "--corpus-limit-mb", type=float, default=DEFAULT_CORPUS_LIMIT_MB, metavar="MB",
        help=f"stop reading the corpus after this much text (default: {DEFAULT_CORPUS_LIMIT_MB:g})",
    )  # fmt: skip
    p.add_argument(
        "--ttft-ms", type=float, default=0.0, metavar="MS",
        help="emulated time to first token, in ms (default: 0)",
    )  # fmt: skip
    p.add_argument(
        "--token-ms", type=float, default=0.0, metavar="MS",
        help="emulated time per streamed token, in ms (default: 0)",
    )  # fmt: skip
    p.add_argument(
        "--port-file", metavar="FILE",
        help="write the bound port to FILE once listening, for launchers that pass "
        "--port 0 (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--require-key-env", metavar="ENV",
        help="require the bearer key held in environment variable ENV on completion "
        "requests (default: none, no key needed)",
    )  # fmt: skip
    p.add_argument(
        "--log-level", default="WARNING", metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR, to stderr (default: WARNING)",
    )  # fmt: skip
    p.add_argument(
        "--http1-only",
        action="store_true",
        help="speak HTTP/1.1 only, like llama.cpp, vLLM and Ollama: the HTTP/2 preface "
        "is answered with 400 and a closed connection, TLS offers only http/1.1",
    )
    p.add_argument(
        "--probabilities",
        action="store_true",
        help="give each token's probability where a request asks for them (llama.cpp "
        "n_probs, OpenAI and Ollama logprobs): the share of the corpus places that go on "
        "the same way (default: off, as a service that gives none)",
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
        "ollama adds GET /api/version and /api/tags (default: openai)",
    )  # fmt: skip
    p.add_argument(
        "--control",
        action="store_true",
        help="answer the control endpoints tests use to switch the service at run time: "
        "/__faults (fault injection), /__auth and /__auth/revoke (token mode), "
        "/__latency, POST /__stats/reset; without it they answer 404 (the read-only "
        "GET /__stats always answers)",
    )
