"""Find a completion server on this machine's loopback, and never mistake another server for one.

With no endpoint configured, the language server asks :func:`discover` which
of a list of ports on ``127.0.0.1`` holds a completion server. Only
loopback is ever asked, only with ``GET``, and only on the services' own
identifying endpoints, in this order, stopping at the first that tells:

1. ``GET /props``: llama.cpp (every answer carries ``Server: llama.cpp``;
   a ready server answers ``default_generation_settings``). While it loads
   its model it answers 503 ``{"error": {"message": "Loading model"}}``:
   that is *loading*, not an error.
2. ``GET /api/version`` ``{"version": "..."}``: Ollama. It completes only
   with a model: ``GET /api/tags`` must list one (``ollama pull`` first).
3. ``GET /v1/models`` with a JSON ``data`` list naming a model:
   OpenAI-compatible (LM Studio, vLLM; vLLM's entries say
   ``owned_by: vllm``). An empty list is a server with no model loaded.
4. Anything else (code-server, which listens on 8080 by default; any web
   server) is not a completion service. Nothing more is sent to it, and
   never a prompt.

A port nothing listens on costs one refused connection. The ports are asked
side by side; the first port of the list whose server completes code wins.
Nothing here raises.

Ollama loads a model on its first request, which can take longer than a
completion may: :func:`load_ollama_model` asks it to load the model ahead,
as its API documents (``POST /api/generate`` with the model and no prompt),
unless ``GET /api/ps`` lists it as loaded already.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx

logger = logging.getLogger(__name__)

#: the only host ever asked
LOOPBACK = "127.0.0.1"
#: seconds to connect to a loopback port (a listener accepts at once)
CONNECT_TIMEOUT = 0.5
#: seconds for a loopback answer (a busy server may take a moment)
READ_TIMEOUT = 3.0
#: the most of an identification answer read (bigger answers are not ours)
MAX_ANSWER_BYTES = 256 * 1024
#: seconds Ollama may take to load a model (a large one from a slow disk)
LOAD_TIMEOUT = 600.0

#: what a port was found to hold
PortState = Literal["found", "loading", "no-model", "other", "closed"]

#: the name users know each kind by
KIND_NAMES = {"llamacpp": "llama.cpp", "ollama": "Ollama", "openai": "OpenAI-compatible server"}


@dataclass(frozen=True, kw_only=True)
class PortAnswer:
    """What one loopback port holds."""

    port: int
    #: ``found`` (completes code), ``loading`` (its model is loading),
    #: ``no-model`` (a completion server without a model), ``other`` (not a
    #: completion service) or ``closed`` (nothing listens)
    state: PortState
    #: ``llamacpp``, ``ollama``, ``openai``, or ``""`` when not a completion service
    kind: str = ""
    #: the endpoint setting that reaches it (``""`` when not a completion service)
    url: str = ""
    #: the model it serves, when it said
    model: str = ""
    #: the name users know it by, e.g. ``llama.cpp`` or ``vLLM``
    name: str = ""
    #: what was seen, in a few words, for the log and the stats
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """The stats view."""
        answer: dict[str, Any] = {"port": self.port, "state": self.state}
        for key in ("kind", "url", "model", "name", "detail"):
            value = getattr(self, key)
            if value:
                answer[key] = value
        return answer

    def describe(self) -> str:
        """``llama.cpp at http://127.0.0.1:8012 (model qwen)``."""
        model = f" (model {self.model})" if self.model else ""
        return f"{self.name or KIND_NAMES.get(self.kind, self.kind)} at {self.url}{model}"


@dataclass(frozen=True)
class Discovery:
    """What every asked port holds, in the order of the ports list."""

    answers: tuple[PortAnswer, ...] = field(default_factory=tuple)

    @property
    def chosen(self) -> PortAnswer | None:
        """The first port whose server completes code."""
        return next((a for a in self.answers if a.state == "found"), None)

    @property
    def loading(self) -> PortAnswer | None:
        """The first completion server still loading its model."""
        return next((a for a in self.answers if a.state == "loading"), None)


class _Answer:
    """One identification answer, read within ``MAX_ANSWER_BYTES``."""

    def __init__(self, status: int, server: str, body: bytes) -> None:
        self.status = status
        self.server = server
        self.body = body

    @property
    def from_llamacpp(self) -> bool:
        return self.server.lower().startswith("llama.cpp")

    def json(self) -> Any:
        try:
            return json.loads(self.body)
        except ValueError:
            return None


async def _get(client: httpx.AsyncClient, url: str) -> _Answer:
    async with client.stream("GET", url) as response:
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_ANSWER_BYTES:
                break
        return _Answer(response.status_code, response.headers.get("server", ""), bytes(body))


def _loading_message(answer: Any) -> bool:
    error = answer.get("error") if isinstance(answer, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return isinstance(message, str) and "loading" in message.lower()


def _first_name(listed: Any, key: str, *names: str) -> str:
    """The first entry's name in ``listed[key]`` (a list of objects), else ``""``."""
    entries = listed.get(key) if isinstance(listed, dict) else None
    if not isinstance(entries, list):
        return ""
    for entry in entries:
        if isinstance(entry, dict):
            for name in names:
                value = entry.get(name)
                if isinstance(value, str) and value:
                    return value
    return ""


def _llamacpp(port: int, origin: str, props: _Answer) -> PortAnswer:
    answer = props.json()
    if props.status == 503 or _loading_message(answer):
        return PortAnswer(port=port, state="loading", kind="llamacpp", url=origin,
                          name="llama.cpp", detail="llama.cpp is loading its model")
    model = ""
    if isinstance(answer, dict):
        alias = answer.get("model_alias") or answer.get("model_path")
        model = alias if isinstance(alias, str) else ""
    if props.status == 200 and isinstance(answer, dict):
        return PortAnswer(port=port, state="found", kind="llamacpp", url=origin, model=model,
                          name="llama.cpp", detail="llama.cpp server")
    return PortAnswer(port=port, state="other", detail=f"llama.cpp answered /props with "
                      f"HTTP {props.status}")


async def _ollama(client: httpx.AsyncClient, port: int, origin: str, version: str) -> PortAnswer:
    tags = await _get(client, f"{origin}/api/tags")
    model = _first_name(tags.json(), "models", "name", "model") if tags.status == 200 else ""
    if not model:
        return PortAnswer(port=port, state="no-model", kind="ollama", url=origin, name="Ollama",
                          detail=f"Ollama {version} has no model: ollama pull one")
    return PortAnswer(port=port, state="found", kind="ollama", url=origin, model=model,
                      name="Ollama", detail=f"Ollama {version}")


def _openai(port: int, origin: str, models: _Answer) -> PortAnswer | None:
    listed = models.json() if models.status == 200 else None
    data = listed.get("data") if isinstance(listed, dict) else None
    if not isinstance(data, list):
        return None
    url = f"{origin}/v1"
    model = _first_name(listed, "data", "id")
    owners = {e.get("owned_by") for e in data if isinstance(e, dict)}
    name = "vLLM" if "vllm" in owners else KIND_NAMES["openai"]
    if not model:
        return PortAnswer(port=port, state="no-model", kind="openai", url=url, name=name,
                          detail=f"{name} lists no model: load one")
    return PortAnswer(port=port, state="found", kind="openai", url=url, model=model, name=name,
                      detail=name)


async def identify(client: httpx.AsyncClient, port: int) -> PortAnswer:
    """What ``127.0.0.1:port`` holds; see the module docstring for the questions asked."""
    origin = f"http://{LOOPBACK}:{port}"
    try:
        props = await _get(client, f"{origin}/props")
        if props.from_llamacpp or (
            props.status == 200 and isinstance(props.json(), dict)
            and "default_generation_settings" in props.json()
        ):
            return _llamacpp(port, origin, props)
        version = await _get(client, f"{origin}/api/version")
        answer = version.json() if version.status == 200 else None
        if isinstance(answer, dict) and isinstance(answer.get("version"), str):
            return await _ollama(client, port, origin, answer["version"])
        models = await _get(client, f"{origin}/v1/models")
        found = _openai(port, origin, models)
        if found is not None:
            return found
        server = f" ({props.server})" if props.server else ""
        return PortAnswer(port=port, state="other",
                          detail=f"an HTTP server{server} that is not a completion service")
    except httpx.ConnectError:
        return PortAnswer(port=port, state="closed", detail="nothing listens")
    except httpx.TimeoutException:
        return PortAnswer(port=port, state="other", detail="no answer in time")
    except (httpx.HTTPError, OSError, ValueError) as exc:
        return PortAnswer(port=port, state="other", detail=f"not HTTP: {type(exc).__name__}")


def probe_client() -> httpx.AsyncClient:
    """The client the questions go through: loopback, no proxy, no redirects, short timeouts.

    Only plain ``http://`` on loopback is ever asked, so the client loads no
    certificate store: loading one at every look cost time and left about
    50 KiB of memory behind each time, in a server that may look for hours.
    """
    return httpx.AsyncClient(
        timeout=httpx.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
        trust_env=False,
        verify=False,
        follow_redirects=False,
        headers={"accept": "application/json"},
    )


async def discover(ports: Sequence[int], client: httpx.AsyncClient | None = None) -> Discovery:
    """Ask every port side by side; the answers keep the order of ``ports``."""
    unique = list(dict.fromkeys(ports))
    own = client is None
    active = probe_client() if client is None else client
    try:
        answers = await asyncio.gather(*(identify(active, port) for port in unique))
    finally:
        if own:
            await active.aclose()
    for answer in answers:
        if answer.state != "closed":
            logger.debug("port %d: %s (%s)", answer.port, answer.state, answer.detail)
    return Discovery(tuple(answers))


async def ollama_model_loaded(client: httpx.AsyncClient, origin: str, model: str) -> bool | None:
    """Whether Ollama holds ``model`` in memory (``GET /api/ps``); None when it does not say."""
    try:
        running = await _get(client, f"{origin}/api/ps")
    except (httpx.HTTPError, OSError):
        return None
    listed = running.json() if running.status == 200 else None
    models = listed.get("models") if isinstance(listed, dict) else None
    if not isinstance(models, list):
        return None
    names = {e.get(k) for e in models if isinstance(e, dict) for k in ("name", "model")}
    return model in names or f"{model}:latest" in names


async def load_ollama_model(
    client: httpx.AsyncClient, origin: str, model: str, *, keep_alive: str = "",
    timeout: float = LOAD_TIMEOUT,
) -> bool:
    """Have Ollama load ``model`` now (no prompt is sent); True when it says it is loaded."""
    if await ollama_model_loaded(client, origin, model):
        return True
    body: dict[str, Any] = {"model": model, "stream": False}
    if keep_alive:
        body["keep_alive"] = keep_alive
    try:
        limit = httpx.Timeout(timeout, connect=CONNECT_TIMEOUT)
        response = await client.post(f"{origin}/api/generate", json=body, timeout=limit)
    except (httpx.HTTPError, OSError) as exc:
        logger.info("Ollama at %s did not load %s: %s", origin, model, exc)
        return False
    if response.status_code != 200:
        logger.info("Ollama at %s did not load %s: HTTP %d", origin, model, response.status_code)
    return response.status_code == 200


async def port_open(port: int, *, timeout: float = CONNECT_TIMEOUT) -> bool:
    """Whether something still listens on ``127.0.0.1:port``: a bare TCP connect, no request.

    Only a refused connection says no; a slow or odd answer keeps the server.
    """
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(LOOPBACK, port), timeout)
    except ConnectionRefusedError:
        return False
    except (OSError, TimeoutError):
        return True
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True
