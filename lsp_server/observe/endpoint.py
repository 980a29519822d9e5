"""The metrics endpoint: ``/metrics``, the dashboard ``/`` and ``/stats.json``.

``MetricsEndpoint`` is a small HTTP/1.1 server on the language server's own
event loop (``asyncio.start_server``): every answer is built from in-memory
state in well under a millisecond, so it never holds up a keystroke, and it
reads the server's state without locks because it runs on the same thread.
It binds 127.0.0.1 unless ``metricsHost`` says otherwise.

=============== ==============================================================
``/metrics``    Prometheus text format (needs the ``metrics`` extra; without
                it the answer is 503 with the install hint); acceptance by
                source, language and scope kind, each with at most
                ``MAX_LABEL_VALUES`` label values (later ones are ``other``)
``/``           the dashboard (``dashboard.html``, self-contained)
``/stats.json`` ``scopecache/stats`` plus the signal history the page draws
``/healthz``    ``ok``
=============== ==============================================================

While it serves, a sampler task records one signal sample per second, so the
dashboard's history moves even when nobody types.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from importlib import resources
from typing import Any

from lsp_server.observe.metrics import MetricsRegistry
from lsp_server.observe.prometheus import LabelValues, MetricsUnavailableError, exposition
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

#: longest request head read, bytes
MAX_HEAD = 8192
#: seconds a client may take to send its request
READ_TIMEOUT = 5.0

StatsView = Callable[[], dict[str, Any]]


def dashboard_html() -> bytes:
    """The dashboard page shipped with the package."""
    return resources.files("lsp_server.observe").joinpath("dashboard.html").read_bytes()


class MetricsEndpoint:
    """Serves a server's metrics over HTTP on its event loop."""

    def __init__(
        self,
        stats: StatsView,
        registry: MetricsRegistry,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        sample: Callable[[], object] | None = None,
    ) -> None:
        self._stats = stats
        self._registry = registry
        self.host = host
        self.port = port
        self._sample = sample
        self._server: asyncio.Server | None = None
        self._sampler: asyncio.Task[None] | None = None
        self._warned = False
        #: the acceptance breakdowns' label values, kept from one scrape to the next
        self._labels = LabelValues()

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` once started."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def start(self) -> None:
        """Listen; raises ``OSError`` when the port is taken."""
        self._server = await asyncio.start_server(self._handle, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        if self._sample is not None:
            self._sampler = asyncio.create_task(self._run_sampler(), name="scopecache-metrics")
        logger.info("metrics and dashboard on %s", self.url)

    async def aclose(self) -> None:
        """Stop listening and sampling."""
        if self._sampler is not None:
            await stop_tasks(self._sampler)
            self._sampler = None
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
            self._server = None

    async def _run_sampler(self) -> None:
        assert self._sample is not None
        while True:
            await asyncio.sleep(self._registry.sample_interval)
            try:
                self._sample()
            except Exception:
                logger.exception("metrics sample failed")

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), READ_TIMEOUT)
            request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
            method, target, *_ = [*request_line.split(" "), "", ""]
            status, content_type, body = self.respond(method, target)
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n"
                f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
                "Connection: close\r\n\r\n".encode("latin-1")
            )
            if method != "HEAD":
                writer.write(body)
            await writer.drain()
        except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        except ConnectionError:
            logger.debug("metrics client went away")
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def respond(self, method: str, target: str) -> tuple[str, str, bytes]:
        """Status line, content type and body for one request."""
        if method not in ("GET", "HEAD"):
            return "405 Method Not Allowed", "text/plain", b"GET only\n"
        path = target.split("?", 1)[0]
        if path == "/metrics":
            try:
                body, content_type = exposition(self._stats(), self._registry, self._labels)
            except MetricsUnavailableError as exc:
                if not self._warned:
                    logger.error("%s", exc)
                    self._warned = True
                return "503 Service Unavailable", "text/plain", f"{exc}\n".encode()
            return "200 OK", content_type, body
        if path in ("/", "/index.html"):
            return "200 OK", "text/html; charset=utf-8", dashboard_html()
        if path == "/stats.json":
            data = {**self._stats(), "history": self._registry.history_json()}
            return "200 OK", "application/json", json.dumps(data).encode()
        if path == "/healthz":
            return "200 OK", "text/plain", b"ok\n"
        return "404 Not Found", "text/plain", b"not found\n"
