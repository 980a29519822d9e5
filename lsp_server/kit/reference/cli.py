"""``scopecache upstream`` / ``python -m lsp_server.kit.reference``: run the service.

``build_parser`` declares the same options as ``lsp_server.cli`` (kept
identical by a test); ``run(args)`` binds the socket (port 0 picks a free
one), writes the port to ``--port-file`` once listening, prints to stderr
where it listens and the settings to paste (``endpoint`` with ``/v1``, and
``transport.caFile`` when it serves TLS), and serves until SIGINT or SIGTERM.

Exit codes: 0 stopped by SIGINT or SIGTERM; 1 the address cannot be bound;
2 bad usage (an unset ``--require-key-env`` variable, ``--corpus-limit-mb``
not above 0, ``--tls-self-signed`` without the ``tls`` extra).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Sequence
from pathlib import Path

from hypercorn.config import Config

from lsp_server.kit.reference.app import ReferenceApp
from lsp_server.kit.reference.corpus import engine_for
from lsp_server.kit.reference.listener import Listener
from lsp_server.kit.reference.options import EPILOG, add_arguments
from lsp_server.kit.reference.responder import Latency
from lsp_server.kit.reference.tls import TlsToolingMissing, server_context, write_tls_files
from lsp_server.kit.reference.tokens import TokenAuthority

logger = logging.getLogger(__name__)

#: idle HTTP/2 and keep-alive connections stay open this long (hypercorn's 5 s
#: default would close a client's warm connection between keystrokes)
KEEP_ALIVE_SECONDS = 300.0


def build_parser() -> argparse.ArgumentParser:
    """Parser for ``python -m lsp_server.kit.reference``."""
    parser = argparse.ArgumentParser(
        prog="python -m lsp_server.kit.reference",
        description="The scopecache reference completion service.",
        epilog=EPILOG,
    )
    add_arguments(parser)
    return parser


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(256)
    sock.setblocking(False)
    return sock


def _write_port_file(path: str, port: int) -> None:
    # Write-then-rename so a reader never sees a half-written number.
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, target)


def _hypercorn_config(keep_alive: float | None) -> Config:
    config = Config()
    config.keep_alive_timeout = KEEP_ALIVE_SECONDS if keep_alive is None else keep_alive
    config.accesslog = None
    config.errorlog = logging.getLogger("hypercorn.error")
    config.h2_max_concurrent_streams = 256
    return config


async def serve(args: argparse.Namespace) -> int:
    """Serve until a signal arrives; returns the exit code."""
    static_key = None
    if args.require_key_env:
        static_key = os.environ.get(args.require_key_env)
        if not static_key:
            print(f"scopecache upstream: {args.require_key_env} is not set", file=sys.stderr)
            return 2
    if args.corpus_limit_mb <= 0:
        print("scopecache upstream: --corpus-limit-mb must be > 0", file=sys.stderr)
        return 2
    engine = engine_for(args.corpus or [], limit_bytes=int(args.corpus_limit_mb * 1e6))
    engine.probabilities = args.probabilities
    app = ReferenceApp(
        engine,
        latency=Latency(ttft_ms=args.ttft_ms, token_ms=args.token_ms),
        authority=TokenAuthority(static_key),
        close_after_stream=args.close_after_stream,
        keep_alive_header=args.keep_alive_timeout,
        identify_as=args.identify_as,
        control=args.control,
    )
    context = None
    tls_files = None
    if args.tls_self_signed:
        try:
            tls_files = write_tls_files(args.tls_self_signed)
        except TlsToolingMissing as exc:
            print(f"scopecache upstream: {exc}; or leave out --tls-self-signed to serve "
                  "cleartext HTTP", file=sys.stderr)
            return 2
        context = server_context(tls_files, http2=not args.http1_only)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        print(f"scopecache upstream: cannot listen on {args.host}:{args.port}: {exc}",
              file=sys.stderr)
        return 1
    port = sock.getsockname()[1]
    listener = Listener(
        app,
        _hypercorn_config(args.keep_alive_timeout),
        app.registry,
        context,
        http1_only=args.http1_only,
    )
    await listener.start(sock)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.port_file:
        _write_port_file(args.port_file, port)
    scheme = "https" if context else "http"
    host = f"[{args.host}]" if ":" in args.host else args.host
    protocols = "h2, http/1.1" if context else "h2c, http/1.1"
    if args.http1_only:
        protocols = "http/1.1 only"
    if args.close_after_stream:
        protocols += ", closes after each stream"
    if args.control:
        protocols += ", control endpoints on"
    lines = [
        f"scopecache upstream listening on {scheme}://{host}:{port} ({protocols}); "
        f"corpus {engine.documents} files, {engine.size} chars",
        f"  endpoint = \"{scheme}://{host}:{port}/v1\"",
    ]
    if tls_files is not None:
        lines.append(f"  transport.caFile = \"{tls_files.ca_file.resolve()}\"")
    print("\n".join(lines), file=sys.stderr, flush=True)
    try:
        await stop.wait()
    finally:
        await listener.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    """Entry point used by ``scopecache upstream``."""
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # hpack and h2 log decoded headers at DEBUG, Authorization included.
    for noisy in ("hpack", "h2", "h11"):
        logging.getLogger(noisy).setLevel(max(logging.INFO, logging.getLogger().level))
    try:
        return asyncio.run(serve(args))
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lsp_server.kit.reference``."""
    return run(build_parser().parse_args(argv))
