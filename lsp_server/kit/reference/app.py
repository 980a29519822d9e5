"""The reference completion service as a raw ASGI application.

Completion endpoints (OpenAI completions and chat, llama.cpp ``/infill``,
Ollama ``/api/generate``; shapes in ``dialects``) answer from the corpus
engine. Around them: ``GET /health``, ``GET /v1/models``, the OAuth 2.0
client-credentials endpoint ``POST /oauth/token`` (token mode, see
``tokens``), the read-only counters at ``GET /__stats`` (see ``stats``) and
control endpoints for tests, all under ``/__``:

- ``POST /__stats/reset`` (zero the counters)
- ``GET|POST|DELETE /__faults`` (see ``faults``)
- ``POST|DELETE /__auth``, ``POST /__auth/revoke`` (token mode on/off, revoke)
- ``POST /__latency`` ``{"ttftMs": x, "tokenMs": y}`` (change emulated latency)

The control endpoints answer only when the service was started with
``--control`` (``control=True``); otherwise they are 404, so a service left
running as an offline completer cannot be switched into failing, demanding
tokens or slowing down by whoever reaches its port. They need no credentials:
with ``--control`` the service is a local test tool on loopback.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from lsp_server.kit.reference import asgi
from lsp_server.kit.reference.asgi import ClientGone, ClientWatch, Receive, Scope, Send
from lsp_server.kit.reference.dialects import (
    MODEL,
    BadRequest,
    Dialect,
    OpenAIChat,
    OpenAICompletions,
)
from lsp_server.kit.reference.engine import CorpusEngine
from lsp_server.kit.reference.faults import NO_FAULT, Fault, FaultError, FaultPlan
from lsp_server.kit.reference.listener import ConnectionRegistry
from lsp_server.kit.reference.local_dialects import LlamaInfill, OllamaGenerate
from lsp_server.kit.reference.responder import Exchange, Latency, Responder
from lsp_server.kit.reference.stats import ServiceStats
from lsp_server.kit.reference.tokens import TokenAuthority, TokenClient

logger = logging.getLogger(__name__)

#: route path -> dialect; the un-versioned OpenAI paths are accepted too
DIALECTS: dict[str, Dialect] = {
    d.endpoint: d for d in (OpenAICompletions(), OpenAIChat(), LlamaInfill(), OllamaGenerate())
}
DIALECTS["/completions"] = DIALECTS["/v1/completions"]
DIALECTS["/chat/completions"] = DIALECTS["/v1/chat/completions"]


class ReferenceApp:
    """ASGI callable; state lives here, one instance per process."""

    def __init__(
        self,
        engine: CorpusEngine,
        *,
        latency: Latency | None = None,
        authority: TokenAuthority | None = None,
        stats: ServiceStats | None = None,
        registry: ConnectionRegistry | None = None,
        close_after_stream: bool = False,
        keep_alive_header: float | None = None,
        identify_as: str = "openai",
        control: bool = False,
    ) -> None:
        self.engine = engine
        #: answer the control endpoints (``--control``); off, they are 404
        self.control = control
        #: close the TCP connection after every streamed response (llama-server does)
        self.close_after_stream = close_after_stream
        #: announce ``Keep-Alive: timeout=N`` on HTTP/1.1 responses
        self.keep_alive_header = keep_alive_header
        #: which server's identification answers to give (``--identify-as``)
        self.identify_as = identify_as
        self.latency = latency or Latency()
        self.authority = authority or TokenAuthority()
        self.stats = stats or ServiceStats()
        self.registry = registry or ConnectionRegistry(self.stats)
        self.faults = FaultPlan()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        if self.keep_alive_header is not None and scope.get("http_version") == "1.1":
            send = _with_keep_alive(send, self.keep_alive_header)
        try:
            await self._route(scope, receive, send)
        except ClientGone:
            logger.debug("client left during %s", scope.get("path"))
        except Exception:
            # A bug here must not become hypercorn's traceback spam per request.
            logger.exception("error handling %s %s", scope.get("method"), scope.get("path"))

    async def _route(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope["method"], scope["path"]
        dialect = DIALECTS.get(path)
        if dialect is not None:
            if method != "POST":
                await asgi.send_error(send, 405, "use POST")
                return
            await self._completion(scope, receive, send, dialect)
            return
        if method == "GET" and path == "/health":
            await asgi.send_json(send, 200, {"status": "ok"})
        elif method == "GET" and path == "/props" and self.identify_as == "llamacpp":
            props = {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 1,
                     "model_alias": MODEL}
            await asgi.send_json(send, 200, props)
        elif method == "GET" and path == "/api/version" and self.identify_as == "ollama":
            await asgi.send_json(send, 200, {"version": "0.0.0-reference"})
        elif method == "GET" and path == "/api/tags" and self.identify_as == "ollama":
            await asgi.send_json(send, 200, {"models": [{"name": MODEL, "model": MODEL}]})
        elif method == "GET" and path in ("/v1/models", "/models"):
            model = {"id": MODEL, "object": "model", "owned_by": "scopecache"}
            await asgi.send_json(send, 200, {"object": "list", "data": [model]})
        elif method == "POST" and path == "/oauth/token":
            await self._token(scope, receive, send)
        elif path.startswith("/__"):
            await self._control(method, path, receive, send)
        else:
            await asgi.send_error(send, 404, f"no route for {method} {path}")

    async def _completion(
        self, scope: Scope, receive: Receive, send: Send, dialect: Dialect
    ) -> None:
        raw = await asgi.read_body(receive)
        connection = self.registry.ident(scope.get("client"))
        record = self.stats.count_request(
            dialect.endpoint, str(scope.get("http_version", "")), connection
        )
        if not self.authority.allows(asgi.header(scope, "authorization")):
            self.stats.auth_failures += 1
            record["status"] = 401
            await asgi.send_error(send, 401, "missing or invalid bearer credential",
                                  [("www-authenticate", "Bearer")])
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise BadRequest("the body must be a JSON object")
            ask = dialect.parse(body)
        except (ValueError, BadRequest) as exc:
            record["status"] = 400
            await asgi.send_error(send, 400, f"bad request: {exc}")
            return
        fault = self.faults.take("completions")
        if fault is not None and fault.mode == "refuse-field":
            field = str(fault.params.get("field", ""))
            if field not in body:
                fault = None  # a body without the field is answered as usual
            else:
                self.stats.faults_applied += 1
                status = int(fault.number("status", 400))
                record["fault"], record["status"] = fault.mode, status
                await asgi.send_error(send, status, f"unsupported parameter: {field}")
                return
        if fault is not None:
            self.stats.faults_applied += 1
            record["fault"] = fault.mode
        client = scope.get("client")
        responder = Responder(
            self.engine,
            self.stats,
            self.latency,
            abort=lambda: self.registry.abort(client),
            cut=lambda: self.registry.cut(client),
            # hypercorn finishes the response with the last chunk: mark it before
            before_last_chunk=(
                (lambda: self.registry.close_after_response(client))
                if self.close_after_stream
                else None
            ),
        )
        async with ClientWatch(receive) as watch:
            await responder.respond(
                Exchange(send, watch, dialect, ask, fault or NO_FAULT, record)
            )

    async def _token(self, scope: Scope, receive: Receive, send: Send) -> None:
        raw = await asgi.read_body(receive)
        self.stats.token_requests += 1
        fault = self.faults.take("token")
        if fault is not None:
            self.stats.faults_applied += 1
            if await self._token_fault(scope, receive, send, fault):
                return
        answer = self.authority.issue(raw, asgi.header(scope, "authorization"))
        if answer.status == 401:
            self.stats.auth_failures += 1
        await asgi.send_json(send, answer.status, answer.body, [("cache-control", "no-store")])

    async def _token_fault(
        self, scope: Scope, receive: Receive, send: Send, fault: Fault
    ) -> bool:
        """Apply a fault to a token request; True when the response is done."""
        if fault.mode == "slow-headers":
            async with ClientWatch(receive) as watch:
                await watch.sleep(fault.number("delay", 5.0))
            return False
        if fault.mode == "reset":
            self.registry.abort(scope["client"])
            return True
        if fault.mode in ("malformed-json", "malformed-sse", "invalid-utf8"):
            await asgi.send_bytes(send, 200, b'{"access_token": ', "application/json")
            return True
        status = int(fault.number("status", 500))
        headers = []
        if fault.params.get("retryAfter") is not None:
            headers.append(("retry-after", str(fault.params["retryAfter"])))
        await asgi.send_json(send, status, {"error": "temporarily_unavailable"}, headers)
        return True

    async def _control(self, method: str, path: str, receive: Receive, send: Send) -> None:
        raw = await asgi.read_body(receive)
        if path == "/__stats" and method == "GET":
            await asgi.send_json(send, 200, self.stats.snapshot())
            return
        if not self.control:
            hint = "control endpoints are off: start the service with --control to use them"
            await asgi.send_error(send, 404, f"no route for {method} {path} ({hint})")
            return
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            await asgi.send_error(send, 400, "control bodies are JSON")
            return
        if not isinstance(body, dict):
            await asgi.send_error(send, 400, "control bodies are JSON objects")
            return
        if path == "/__stats/reset" and method == "POST":
            self.stats.reset()
            await asgi.send_json(send, 200, self.stats.snapshot())
        elif path == "/__faults":
            await self._faults(method, body, send)
        elif path == "/__auth" and method == "POST":
            client = TokenClient(
                client_id=str(body.get("clientId", "")),
                client_secret=str(body.get("clientSecret", "")),
                lifetime=float(body.get("lifetime", 60.0)),
            )
            self.authority.enable_tokens(client)
            await asgi.send_json(send, 200, {"tokenMode": True, "lifetime": client.lifetime})
        elif path == "/__auth" and method == "DELETE":
            self.authority.disable_tokens()
            await asgi.send_json(send, 200, {"tokenMode": False})
        elif path == "/__auth/revoke" and method == "POST":
            await asgi.send_json(send, 200, {"revoked": self.authority.revoke_all()})
        elif path == "/__latency" and method == "POST":
            self.latency.ttft_ms = float(body.get("ttftMs", self.latency.ttft_ms))
            self.latency.token_ms = float(body.get("tokenMs", self.latency.token_ms))
            await asgi.send_json(
                send, 200, {"ttftMs": self.latency.ttft_ms, "tokenMs": self.latency.token_ms}
            )
        else:
            await asgi.send_error(send, 404, f"no control route {method} {path}")

    async def _faults(self, method: str, body: dict[str, Any], send: Send) -> None:
        if method == "POST":
            try:
                self.faults.arm(body)
            except FaultError as exc:
                await asgi.send_error(send, 400, str(exc))
                return
        elif method == "DELETE":
            self.faults.clear()
        await asgi.send_json(send, 200, {"armed": self.faults.describe()})


def _with_keep_alive(send: Send, timeout: float) -> Send:
    """``send`` adding ``Keep-Alive: timeout=N, max=100`` to the response head."""
    value = f"timeout={timeout:g}, max=100".encode()

    async def keep_alive_send(message: dict[str, Any]) -> None:
        if message.get("type") == "http.response.start":
            headers = [*message.get("headers", []), (b"keep-alive", value)]
            message = {**message, "headers": headers}
        await send(message)

    return keep_alive_send


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
