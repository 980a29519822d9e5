"""When the server looks for a local completion server, and what it makes of the answers.

The looks go through ``LocalDiscovery``'s probe seam: each test scripts what
the ports hold, look after look (what is asked of a real port is tested in
tests/e2e/test_discovery.py against real servers).
"""

from __future__ import annotations

from collections.abc import Sequence

from lsp_server.server.discovery import LocalDiscovery
from lsp_server.settings import DiscoverySettings, Settings
from tests.support.conditions import until
from transport.discovery import Discovery, PortAnswer

LLAMA = PortAnswer(port=8012, state="found", kind="llamacpp", url="http://127.0.0.1:8012",
                   name="llama.cpp", model="qwen")
LOADING = PortAnswer(port=8012, state="loading", kind="llamacpp", url="http://127.0.0.1:8012",
                     name="llama.cpp", detail="llama.cpp is loading its model")
WEB = PortAnswer(port=8080, state="other", detail="an HTTP server that is not a completion service")
CLOSED = PortAnswer(port=8012, state="closed", detail="nothing listens")


class ScriptedPorts:
    """A probe answering each look with the next scripted discovery (the last one repeats)."""

    def __init__(self, *looks: Discovery) -> None:
        self.looks = list(looks)
        self.asked: list[tuple[int, ...]] = []

    async def __call__(self, ports: Sequence[int]) -> Discovery:
        self.asked.append(tuple(ports))
        return self.looks.pop(0) if len(self.looks) > 1 else self.looks[0]


def settings(**discovery: object) -> Settings:
    return Settings(discovery=DiscoverySettings(**discovery))  # type: ignore[arg-type]


def looking(probe: ScriptedPorts, changes: list[str], **kwargs: float) -> LocalDiscovery:
    discovery = LocalDiscovery(on_change=lambda: changes.append("changed"), probe=probe, **kwargs)
    return discovery


async def test_nothing_found_keeps_looking_with_back_off_and_a_later_server_is_used() -> None:
    probe = ScriptedPorts(Discovery((CLOSED, WEB)), Discovery((CLOSED, WEB)), Discovery((LLAMA,)))
    changes: list[str] = []
    discovery = looking(probe, changes, first_delay=0.001, max_delay=0.002)
    discovery.configure(settings(ports=[8012, 8080]))
    discovery.start()

    async def found() -> bool:
        return discovery.state == "found"

    await until(found, "the server started later to be found")
    assert len(probe.asked) == 3 and probe.asked[0] == (8012, 8080)
    assert changes == ["changed"]
    assert discovery.resolve(settings()).endpoint == "http://127.0.0.1:8012"
    snapshot = discovery.snapshot(settings())
    assert snapshot["url"] == "http://127.0.0.1:8012" and snapshot["source"] == "discovered"
    assert snapshot["kind"] == "llamacpp" and snapshot["model"] == "qwen"
    await discovery.aclose()


async def test_with_nothing_found_the_message_lists_the_ports_what_held_them_and_the_setting(
) -> None:
    probe = ScriptedPorts(Discovery((CLOSED, WEB)))
    discovery = looking(probe, [], first_delay=3600)
    discovery.configure(settings(ports=[8012, 8080]))
    discovery.start()

    async def none() -> bool:
        return discovery.state == "none"

    await until(none, "the first look to end")
    message = discovery.snapshot(settings())["message"]
    assert message.startswith("no completion server found on 127.0.0.1 (ports 8012, 8080; "
                              "port 8080: an HTTP server that is not a completion service)")
    assert "set endpoint (scopecache.endpoint in VS Code)" in message
    assert discovery.resolve(settings()).endpoint is None
    await discovery.aclose()


async def test_the_same_settings_sent_again_wake_a_waiting_look_at_once() -> None:
    probe = ScriptedPorts(Discovery((CLOSED,)), Discovery((LLAMA,)))
    discovery = looking(probe, [], first_delay=3600)
    discovery.configure(settings(ports=[8012]))
    discovery.start()

    async def none() -> bool:
        return discovery.state == "none"

    await until(none, "the first look to end")
    discovery.configure(settings(ports=[8012]))

    async def found() -> bool:
        return discovery.state == "found"

    await until(found, "a second look, woken by the settings")
    await discovery.aclose()


async def test_a_model_still_loading_is_loading_not_an_error_and_is_used_once_ready() -> None:
    probe = ScriptedPorts(Discovery((LOADING,)), Discovery((LLAMA,)))
    changes: list[str] = []
    discovery = looking(probe, changes, loading_recheck=3600)
    discovery.configure(settings(ports=[8012]))
    discovery.start()

    async def loading() -> bool:
        return discovery.state == "loading"

    await until(loading, "the first look to end")
    snapshot = discovery.snapshot(settings())
    assert snapshot["url"] == "http://127.0.0.1:8012" and snapshot["kind"] == "llamacpp"
    assert "is loading its model" in snapshot["message"]
    assert discovery.resolve(settings()).endpoint is None
    assert changes == []
    discovery.configure(settings(ports=[8012]))  # look again now, not in an hour

    async def found() -> bool:
        return discovery.state == "found"

    await until(found, "the loaded server to be used")
    assert changes == ["changed"]
    await discovery.aclose()


async def test_a_configured_endpoint_or_discovery_off_asks_no_port() -> None:
    probe = ScriptedPorts(Discovery((LLAMA,)))
    discovery = looking(probe, [])
    configured = Settings(endpoint="https://host:8443/v1")
    discovery.configure(configured)
    discovery.start()
    assert discovery.state == "configured"
    assert discovery.snapshot(configured)["url"] == "https://host:8443/v1"
    discovery.configure(settings(enabled=False))
    assert discovery.state == "off"
    assert "discovery.enabled" in discovery.message()
    assert discovery.resolve(settings(enabled=False)).endpoint is None
    assert probe.asked == []


async def test_ollama_found_is_loading_while_its_model_loads_then_used() -> None:
    import asyncio

    ollama = PortAnswer(port=11434, state="found", kind="ollama", url="http://127.0.0.1:11434",
                        name="Ollama", model="qwen2.5-coder:1.5b-base")
    loaded = asyncio.Event()
    prepared: list[tuple[str, str]] = []

    async def load(answer: PortAnswer, current: Settings) -> None:
        prepared.append((answer.url, current.completion.keep_alive))
        await loaded.wait()

    changes: list[str] = []
    discovery = LocalDiscovery(
        on_change=lambda: changes.append("changed"), probe=ScriptedPorts(Discovery((ollama,))),
        prepare=load,
    )
    discovery.configure(settings(ports=[11434]))
    discovery.start()

    async def loading() -> bool:
        return discovery.state == "loading"

    await until(loading, "the model to be loading")
    assert "is loading its model" in discovery.message()
    assert discovery.resolve(settings()).endpoint is None and changes == []
    loaded.set()

    async def found() -> bool:
        return discovery.state == "found"

    await until(found, "Ollama to be used once its model is loaded")
    assert prepared == [("http://127.0.0.1:11434", "30m")]
    assert discovery.resolve(settings()).endpoint == "http://127.0.0.1:11434"
    await discovery.aclose()


async def test_a_server_that_stops_listening_is_let_go_and_the_next_one_is_found() -> None:
    ollama = PortAnswer(port=11434, state="found", kind="ollama", url="http://127.0.0.1:11434",
                        name="Ollama", model="qwen2.5-coder:1.5b-base")
    probe = ScriptedPorts(Discovery((LLAMA,)), Discovery((CLOSED,)), Discovery((ollama,)))
    listens = {8012: [True, False]}

    async def listening(port: int) -> bool:
        return listens[port].pop(0) if len(listens[port]) > 1 else listens[port][0]

    async def ready(answer: PortAnswer, current: Settings) -> None:
        pass

    changes: list[str] = []
    discovery = LocalDiscovery(
        on_change=lambda: changes.append("changed"), probe=probe, prepare=ready,
        listening=listening, first_delay=0.001, watch_every=0.001,
    )
    discovery.configure(settings(ports=[8012, 11434]))
    discovery.start()

    async def on_ollama() -> bool:
        return discovery.found is not None and discovery.found.kind == "ollama"

    await until(on_ollama, "the next server to be found after the first stopped")
    # used, let go (completions off: no endpoint), then the next one used
    assert changes == ["changed", "changed", "changed"]
    assert discovery.resolve(settings()).endpoint == "http://127.0.0.1:11434"
    await discovery.aclose()
