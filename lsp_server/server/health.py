"""``scopecache/health``: does completion work right now, and if not, what to change.

The answer is built from one real completion request sent through the
server's own backend (the same connection pool, TLS context, credentials
and provider as the user's requests, not a socket probe), joined with what
the server knows about its configuration::

    {"ok": true | false,              # completions work
     "version": "0.1.0",
     "endpoint": URL | null,          # the configured one, or the one discovery found
     "provider": "openai",
     "discovery": {...},              # scopecache/stats' ``endpoint``: state, source, message
     "settingsProblems": [...],       # every problem of the settings last received
     "notices": {topic: message},     # problems the user was told about
     "tls": {"used": bool, "verify": bool, "caFile": path | null,
             "caFileStatus": "not set" | "ok" | "missing" | "unreadable" | "not PEM"},
     "upstream": {"status": "ok" | "error" | "off", "kind": error kind | null,
                  "message": str, "fix": str | null, "latencyMs": float, "chars": int},
     "fix": the first thing to change | null}

An endpoint configuration that could not be used (a CA file missing at
start-up) is tried again first, so the answer reflects the files as they
are now. The probe is not counted in the request stats and its answer is
never cached.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from lsp_server.settings import Settings
from transport.backend import CompletionBackend, CompletionRequest
from transport.errors import CircuitOpenError, TransportError, UpstreamStatusError

if TYPE_CHECKING:
    from lsp_server.server.language_server import ScopecacheServer

logger = logging.getLogger(__name__)

#: what the probe asks the service to complete
PROBE_PREFIX = "def add(a, b):\n    return "
#: the longest the probe may take, in seconds (the client waits a little longer)
MAX_PROBE_SECONDS = 10.0


async def health_answer(ls: ScopecacheServer) -> dict[str, Any]:
    """The ``scopecache/health`` answer of ``ls``."""
    from lsp_server.server.language_server import __version__

    settings = ls.discovery.resolve(ls.settings)
    if ls.backend is None and ls.endpoint_retry.problem is not None:
        await ls.rebuild_backend()
    ca_status = await asyncio.to_thread(ca_file_status, settings.transport.ca_file)
    upstream = await _upstream(ls, settings, ca_status)
    fix = upstream["fix"]
    if fix is None and ls.settings_problems:
        fix = "correct or remove the settings listed in settingsProblems"
    return {
        "ok": upstream["status"] == "ok",
        "version": __version__,
        "endpoint": settings.endpoint,
        "provider": settings.provider,
        "discovery": ls.discovery.snapshot(ls.settings),
        "settingsProblems": list(ls.settings_problems),
        "notices": ls.notifier.active(),
        "tls": {
            "used": (settings.endpoint or "").startswith("https://"),
            "verify": settings.transport.verify_tls,
            "caFile": settings.transport.ca_file,
            "caFileStatus": ca_status,
        },
        "upstream": upstream,
        "fix": fix,
    }


def ca_file_status(path: str | None) -> str:
    """``not set``, ``ok``, ``missing``, ``unreadable`` or ``not PEM`` (reads the file)."""
    if not path:
        return "not set"
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 20)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "unreadable"
    return "ok" if b"-----BEGIN CERTIFICATE-----" in head else "not PEM"


async def _upstream(ls: ScopecacheServer, settings: Settings, ca_status: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": "off",
        "kind": None,
        "message": "",
        "fix": None,
        "latencyMs": 0.0,
        "chars": 0,
    }
    backend = ls.backend
    if backend is None:
        if settings.endpoint is None:
            result["message"] = ls.discovery.message(settings)
            result["fix"] = (
                "start a completion server on one of discovery.ports, or set the endpoint "
                "setting (scopecache.endpoint in VS Code) to the completion service's base URL"
            )
            return result
        problem = ls.endpoint_retry.problem or "the endpoint settings cannot be used"
        result.update(status="error", kind="config", message=problem)
        result["fix"] = configuration_fix(problem, settings, ca_status)
        return result
    timeout = min(
        settings.transport.connect_timeout + settings.transport.read_timeout, MAX_PROBE_SECONDS
    )
    started = time.perf_counter()
    try:
        result["chars"] = await _probe(backend, settings, timeout)
    except TimeoutError:
        result.update(status="error", kind="timeout", message=f"no answer within {timeout:g} s")
        result["fix"] = (
            "check that endpoint points at a running completion service; a slow model "
            "may need a larger transport.readTimeout"
        )
    except TransportError as exc:
        result.update(status="error", kind=exc.kind, message=str(exc))
        result["fix"] = transport_fix(exc, settings, ca_status, ls.notifier.active())
    else:
        result["status"] = "ok"
        result["message"] = f"the service answered a completion ({result['chars']} characters)"
    result["latencyMs"] = round((time.perf_counter() - started) * 1000.0, 1)
    logger.info("health probe: %s %s", result["status"], result["kind"] or "")
    return result


async def _probe(backend: CompletionBackend, settings: Settings, timeout: float) -> int:
    request = CompletionRequest(
        prefix=PROBE_PREFIX,
        suffix="\n",
        language="python",
        max_tokens=min(8, settings.completion.max_tokens),
        temperature=settings.completion.temperature,
        request_id="health",
    )
    chars = 0
    async with asyncio.timeout(timeout):
        async with contextlib.aclosing(backend.stream(request)) as chunks:  # type: ignore[type-var]
            async for chunk in chunks:
                chars += len(chunk)
    return chars


def configuration_fix(problem: str, settings: Settings, ca_status: str) -> str:
    """What to change when the backend could not be built."""
    ca_file = settings.transport.ca_file
    if ca_file and ca_status != "ok":
        return (
            f"transport.caFile {ca_file!r} is {ca_status}: point it at the CA certificate "
            "(PEM) of the service, or remove it; the server re-checks on the next request"
        )
    return f"change the setting the message names ({problem})"


def transport_fix(
    exc: TransportError, settings: Settings, ca_status: str, notices: dict[str, str]
) -> str:
    """What to change for a failed probe, named after the error."""
    endpoint = settings.endpoint or ""
    parts = urlsplit(endpoint)
    where = parts.netloc or endpoint
    message = str(exc)
    kind = exc.kind
    if kind == "tls":
        if "wrong version number" in message.lower() or "WRONG_VERSION" in message:
            return f"the service at {where} does not speak TLS: use http:// in endpoint"
        ca_file = settings.transport.ca_file
        if not ca_file:
            return (
                "the service's certificate is not signed by a trusted CA: set "
                "transport.caFile to the CA certificate (PEM) that signed it (for "
                "`scopecache upstream --tls-self-signed DIR`, that is DIR/ca.pem)"
            )
        return (
            f"transport.caFile {ca_file!r} does not verify the service's certificate: "
            "point it at the CA that signed it"
        )
    if kind == "config":
        return configuration_fix(message, settings, ca_status)
    if kind == "connect":
        return (
            f"nothing accepts connections at {where}: start the completion service, "
            "or correct the host and port in endpoint"
        )
    if kind == "dns":
        return f"{parts.hostname or where} does not resolve: correct the host in endpoint"
    if kind == "timeout":
        return (
            "check that endpoint points at a running completion service; a slow model "
            "may need a larger transport.readTimeout"
        )
    if kind == "auth_rejected":
        return (
            f"the service refused the credentials: put its API key in the environment "
            f"variable {settings.api_key_env} (apiKeyEnv) or correct the auth.* settings"
        )
    if kind == "auth":
        return "no access token could be obtained: correct the auth.* settings"
    if kind == "rate_limited":
        return "the service is overloaded (HTTP 429/503): wait, or ask less often"
    if isinstance(exc, UpstreamStatusError) and exc.status in (404, 405):
        return (
            f"the service has no completion API at {endpoint}: endpoint must be the API's "
            "base URL (OpenAI-compatible services usually end in /v1) and provider "
            f"({settings.provider}) must match the service"
        )
    if isinstance(exc, UpstreamStatusError):
        return f"the service answered HTTP {exc.status}: see its log"
    if kind == "protocol":
        return f"the answer could not be read: check that provider ({settings.provider}) fits"
    if isinstance(exc, CircuitOpenError):
        last = notices.get("upstream", "")
        return "requests pause after repeated failures; " + (
            f"the last one: {last}" if last else "run the check again in a few seconds"
        )
    return "the connection to the service broke: see the service's log"
