"""``scopecache serve``: run the language server on stdio or TCP."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from lsp_server import create_server
from lsp_server.server.client_log import LOG_TO_CLIENT_ENV, ClientLogHandler
from lsp_server.server.settings_codec import SettingsFileError, load_toml, parse_settings
from lsp_server.settings import Settings

logger = logging.getLogger(__name__)

#: pygls's messages for normal events, logged at DEBUG instead of WARNING/ERROR:
#: a ``$/cancelRequest`` for a request already answered (editors send them all
#: the time), and a message the server had ready when the editor closed the pipe
ROUTINE_PYGLS_MESSAGES = (
    "Cancel notification for unknown message id",
    "Unable to send data, no available transport",
)


class RoutineProtocolEvents(logging.Filter):
    """Turns pygls's warnings about normal protocol events into DEBUG records."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Demote a routine message; keep it only if DEBUG is enabled for its logger."""
        message = record.msg if isinstance(record.msg, str) else ""
        if record.levelno > logging.DEBUG and message.startswith(ROUTINE_PYGLS_MESSAGES):
            record.levelno, record.levelname = logging.DEBUG, "DEBUG"
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


def configure_logging(
    level: str, log_file: str | None, *, to_client: bool = False
) -> ClientLogHandler | None:
    """Send logs to a file or stderr, never to stdout (that is the protocol's).

    With ``to_client`` (and no ``log_file``) records go to the client as
    ``window/logMessage`` once a server is attached to the returned handler,
    and to stderr until then.
    """
    handler: logging.Handler
    handler = logging.FileHandler(log_file) if log_file else logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    forwarder = ClientLogHandler(handler) if to_client and not log_file else None
    root = logging.getLogger()
    root.handlers[:] = [forwarder or handler]
    # Python's warnings become WARNING records, at their level in the editor too.
    logging.captureWarnings(forwarder is not None)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    # pygls logs every message body at DEBUG/INFO (document texts); keep it quieter.
    logging.getLogger("pygls").setLevel(max(root.level, logging.WARNING))
    json_rpc = logging.getLogger("pygls.protocol.json_rpc")
    if not any(isinstance(f, RoutineProtocolEvents) for f in json_rpc.filters):
        json_rpc.addFilter(RoutineProtocolEvents())
    # The HTTP/2 stack logs decoded headers at DEBUG, the Authorization header
    # included: never let those through, whatever --log-level says.
    for name in ("hpack", "h2", "h11", "httpcore"):
        logging.getLogger(name).setLevel(max(root.level, logging.INFO))
    logging.getLogger("httpx").setLevel(max(root.level, logging.WARNING))
    return forwarder


def wants_log_to_client(args: argparse.Namespace) -> bool:
    """``--log-to-client`` or ``SCOPECACHE_LOG_TO_CLIENT=1``; a ``--log-file`` wins over both."""
    asked = bool(getattr(args, "log_to_client", False))
    asked = asked or os.environ.get(LOG_TO_CLIENT_ENV, "").strip().lower() in ("1", "true", "yes")
    return asked and not args.log_file


def load_settings(path: str | None) -> tuple[Settings, list[str]]:
    """Settings from a TOML file (or defaults), with the problems found."""
    if not path:
        return Settings(), []
    try:
        table = load_toml(path)
    except SettingsFileError as exc:
        return Settings(), [str(exc)]
    return parse_settings(table)


def run(args: argparse.Namespace) -> int:
    """Start the server and block until the client says exit."""
    forwarder = configure_logging(
        args.log_level, args.log_file, to_client=wants_log_to_client(args)
    )
    settings, problems = load_settings(args.config)
    for problem in problems:
        logger.error("config: %s", problem)
    if args.record_trace:
        settings.record_trace = args.record_trace
    if args.metrics_port is not None:
        settings.metrics_port = args.metrics_port
    server = create_server(settings)
    server.owns_process = True
    if forwarder is not None:
        forwarder.attach(server)
    if problems:
        server.notifier.problem("config", "settings file problems: " + "; ".join(problems))
    if args.tcp and getattr(args, "stdio", False):
        logger.error("--stdio and --tcp exclude each other: pass one of them")
        return 2
    if args.tcp:
        host, _, port = args.tcp.rpartition(":")
        if not port.isdigit() or int(port) > 65535:
            logger.error("--tcp wants HOST:PORT (PORT 0-65535, 0: any free port), got %r", args.tcp)
            return 2
        # No host: loopback only; a language server has no business on other interfaces.
        server.start_tcp(host or "127.0.0.1", int(port))
    else:
        server.start_io()
    return server.exit_code
