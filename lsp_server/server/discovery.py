"""With no ``endpoint`` set: find a completion server on loopback, say which, and look again later.

The questions asked of each port are ``transport.discovery``'s (only
127.0.0.1, only ``GET`` on the services' identifying paths, never a
prompt). This module decides when to ask and what the server does with the
answer. Its state is the ``endpoint`` field of ``scopecache/stats``:

* ``configured``: the ``endpoint`` setting is set; nothing is probed.
* ``searching``: the first look is under way.
* ``found``: a server that completes code; its URL is used as the endpoint
  (``source: discovered``). Every 10 s a bare TCP connect (no request, so
  nothing in the server's log) checks that it still listens; once it is
  gone (stopped, or replaced by another server elsewhere) completions stop
  and the ports are looked at again.
* ``loading``: a completion server still loading its model (llama.cpp
  answers 503 while it loads): not an error; looked at again every second.
  Ollama loads a model on its first request: when discovery finds it, it
  has the model loaded first (``transport.discovery.load_ollama_model``),
  ``loading`` meanwhile, so the first completion does not wait for it.
* ``none``: nothing found; completions stay off, the log says so once
  (naming the ``endpoint`` setting), and the ports are looked at again with
  a back-off (1 s doubling to 30 s), so a server started after the editor
  is found without a restart.
* ``off``: no endpoint and ``discovery.enabled`` false: completions are off.

Every look runs in one background task, never on a keystroke's way; the
same settings sent again wake it at once. No ``window/showMessage``: having
no local server is a normal state, not a failure to pop up at every start;
the status item, ``:checkhealth``, the stats and the log say it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from lsp_server.settings import Settings
from transport.discovery import (
    LOOPBACK,
    Discovery,
    PortAnswer,
    discover,
    load_ollama_model,
    port_open,
    probe_client,
)

logger = logging.getLogger(__name__)

#: seconds before looking again after nothing was found, and the longest wait
FIRST_DELAY = 1.0
MAX_DELAY = 30.0
#: seconds between two looks at a server loading its model
LOADING_RECHECK = 1.0
#: seconds between two checks that the server in use still listens
WATCH_SECONDS = 10.0
#: the setting that names a server, as the VS Code user writes it
VSCODE_SETTING = "scopecache.endpoint"
#: how a user starts a server discovery finds (llama.cpp's code-completion preset)
START_HINT = "llama-server --fim-qwen-1.5b-default (port 8012) or Ollama"

Probe = Callable[[Sequence[int]], Awaitable[Discovery]]
#: readies a found server before it is used (Ollama: load the model)
Prepare = Callable[[PortAnswer, Settings], Awaitable[None]]
#: whether a port still listens
Listening = Callable[[int], Awaitable[bool]]


async def prepare_server(answer: PortAnswer, settings: Settings) -> None:
    """Have Ollama load the model completions will ask for; other servers are ready."""
    if answer.kind != "ollama":
        return
    model = settings.model or answer.model
    async with probe_client() as client:
        await load_ollama_model(
            client, answer.url, model, keep_alive=settings.completion.keep_alive
        )


def _seen(discovery: Discovery) -> list[PortAnswer]:
    return [a for a in discovery.answers if a.state not in ("closed", "found")]


class LocalDiscovery:
    """When to look for a local server, what was found, and how it is told."""

    def __init__(
        self,
        *,
        on_change: Callable[[], None],
        probe: Probe = discover,
        prepare: Prepare = prepare_server,
        listening: Listening = port_open,
        first_delay: float = FIRST_DELAY,
        max_delay: float = MAX_DELAY,
        loading_recheck: float = LOADING_RECHECK,
        watch_every: float = WATCH_SECONDS,
    ) -> None:
        self._on_change = on_change
        self._probe = probe
        self._prepare = prepare
        self._listening = listening
        self._watch_every = watch_every
        self._settings = Settings()
        self._first = first_delay
        self._max = max_delay
        self._loading_recheck = loading_recheck
        self._signature: tuple[Any, ...] | None = None
        self._ports: tuple[int, ...] = ()
        self._task: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._started = False
        #: ``configured``, ``searching``, ``found``, ``loading``, ``none`` or ``off``
        self.state = "configured"
        #: the server in use, once found
        self.found: PortAnswer | None = None
        #: the completion server loading its model, while ``loading``
        self.loading: PortAnswer | None = None
        #: what the other listening ports held at the last look
        self.seen: list[PortAnswer] = []
        #: looks taken so far
        self.probes = 0
        #: set to False by a host that brings its own backend
        self.allowed = True

    # -- settings ---------------------------------------------------------

    def configure(self, settings: Settings) -> None:
        """Follow the settings: look when no endpoint is set, stop when one is."""
        wanted = self.allowed and settings.endpoint is None and settings.discovery.enabled
        ports = tuple(dict.fromkeys(settings.discovery.ports))
        self._settings = settings
        signature = (wanted, ports, settings.endpoint is None, settings.discovery.enabled)
        if signature == self._signature:
            if wanted and self.state in ("none", "loading", "found"):
                self._wake.set()  # the same settings again: look (or check) now
            return
        self._signature = signature
        self._ports = ports
        self._stop()
        self.found = self.loading = None
        self.seen = []
        if not wanted:
            configured = settings.endpoint is not None or not self.allowed
            self.state = "configured" if configured else "off"
            if self.state == "off":
                logger.info("no endpoint set and discovery is off: completions are off")
            return
        self.state = "searching"
        if self._started:
            self._run()

    def resolve(self, settings: Settings) -> Settings:
        """``settings`` with the found server as the endpoint, when one was found."""
        if settings.endpoint is not None or self.found is None:
            return settings
        return dataclasses.replace(settings, endpoint=self.found.url)

    # -- the looks --------------------------------------------------------

    def start(self) -> None:
        """Start looking (from ``initialized`` on, off the start-up path)."""
        self._started = True
        if self.state == "searching" and self._task is None:
            self._run()

    def _run(self) -> None:
        self._wake = asyncio.Event()
        self._task = asyncio.ensure_future(self._follow(self._ports))

    def _stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()

    async def _follow(self, ports: tuple[int, ...]) -> None:
        """Look until a server is found, use it while it listens, then look again."""
        while True:
            found = await self._look_until_found(ports)
            await self._watch(found)
            self._gone(found)

    async def _watch(self, found: PortAnswer) -> None:
        """Return once nothing listens on the found server's port any more."""
        while True:
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._watch_every)
            try:
                if not await self._listening(found.port):
                    return
            except Exception:  # a failed check keeps the server
                logger.exception("checking %s failed", found.describe())

    def _gone(self, found: PortAnswer) -> None:
        logger.warning("%s stopped listening: completions are off until a completion server "
                       "is found again", found.describe())
        self.state, self.found = "searching", None
        self._on_change()

    async def _look_until_found(self, ports: tuple[int, ...]) -> PortAnswer:
        delay = self._first
        while True:
            self._wake.clear()
            try:
                discovery = await self._probe(ports)
            except Exception:  # never let a look end the loop
                logger.exception("looking for a local completion server failed")
                discovery = Discovery()
            self.probes += 1
            self.seen = _seen(discovery)
            chosen = discovery.chosen
            if chosen is not None:
                if chosen.kind == "ollama":
                    self._loading(chosen)
                    try:
                        await self._prepare(chosen, self._settings)
                    except Exception:  # the completions will tell what is wrong
                        logger.exception("readying %s failed", chosen.describe())
                self._found(chosen)
                return chosen
            if discovery.loading is not None:
                self._loading(discovery.loading)
                wait = self._loading_recheck
            else:
                self._none()
                wait, delay = delay, min(delay * 2, self._max)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    def _found(self, answer: PortAnswer) -> None:
        self.state, self.found, self.loading = "found", answer, None
        logger.info("found a completion server on %s: %s", LOOPBACK, answer.describe())
        self._on_change()

    def _loading(self, answer: PortAnswer) -> None:
        if self.state != "loading":
            logger.info("%s is loading its model: completions start when it is ready",
                        answer.describe())
        self.state, self.loading = "loading", answer

    def _none(self) -> None:
        first = self.state != "none"
        self.state, self.loading = "none", None
        if first:
            logger.warning("%s", self.message())

    async def aclose(self) -> None:
        """Stop looking (shutdown)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # -- what the user sees -----------------------------------------------

    def message(self, settings: Settings | None = None) -> str:
        """One sentence for the log, the stats, the status bar's tooltip and :checkhealth."""
        if self.state == "found" and self.found is not None:
            return (f"using {self.found.describe()}, found on {LOOPBACK}; set endpoint "
                    f"({VSCODE_SETTING} in VS Code) to use another server")
        if self.state == "loading" and self.loading is not None:
            return (f"{self.loading.describe()} is loading its model: completions start "
                    "when it is ready")
        if self.state == "configured":
            where = settings.endpoint if settings is not None else None
            return f"endpoint set: {where}" if where else "the endpoint is set by the host"
        if self.state == "off":
            return (f"no endpoint set and discovery is off (discovery.enabled): completions "
                    f"are off; set endpoint ({VSCODE_SETTING} in VS Code) to the completion "
                    "service's base URL")
        ports = ", ".join(str(p) for p in self._ports) or "none listed"
        if self.state == "searching":
            return f"looking for a completion server on {LOOPBACK} (ports {ports})"
        others = "".join(f"; port {a.port}: {a.detail}" for a in self.seen)
        return (f"no completion server found on {LOOPBACK} (ports {ports}{others}): completions "
                f"are off; start one ({START_HINT}) or set endpoint ({VSCODE_SETTING} in VS "
                "Code) to its base URL")

    def snapshot(self, settings: Settings) -> dict[str, Any]:
        """The ``endpoint`` field of ``scopecache/stats``."""
        server = self.found if self.state == "found" else self.loading
        url = settings.endpoint if self.state == "configured" else (server.url if server else None)
        answer: dict[str, Any] = {
            "url": url,
            "kind": server.kind if server is not None else None,
            "state": self.state,
            "source": "configured" if self.state == "configured" else (
                "discovered" if server is not None else None),
            "setting": "endpoint",
            "message": self.message(settings),
        }
        if server is not None:
            answer["name"] = server.name
            if server.model:
                answer["model"] = server.model
        if self.state != "configured":
            answer["ports"] = list(self._ports)
            answer["probes"] = self.probes
            answer["seen"] = [a.to_json() for a in self.seen]
        return answer
