"""``provider = "auto"`` against the reference service posing as Ollama or llama.cpp.

No real Ollama can run here, so the Ollama path is checked against the
reference service's Ollama-shaped ``/api/version``, ``/api/tags`` and
``/api/generate`` (``--identify-as ollama``), with the real server process.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lsp_server.kit.client import ServerProcess
from tests.support.backend import complete, started_backend
from tests.support.greet import CORPUS, TEXT
from tests.support.redis_server import free_port
from tests.support.reference import ReferenceService
from transport.backend import CompletionRequest
from transport.http import REDETECT_SECONDS
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e

URI = "file:///work/project/greet.py"


@pytest.fixture(scope="module", params=["ollama", "llamacpp", "openai"])
def posing_service(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, ReferenceService]]:
    corpus = tmp_path_factory.mktemp("corpus") / "greet.py"
    corpus.write_text(CORPUS)
    kind = str(request.param)
    with ReferenceService(tls=True, corpus=[corpus], extra_args=["--identify-as", kind]) as svc:
        yield kind, svc


async def test_auto_detects_the_service_and_counts_its_tokens(
    posing_service: tuple[str, ReferenceService],
) -> None:
    kind, svc = posing_service
    svc.reset()
    options = {
        "endpoint": svc.url,
        "transport": {"caFile": str(svc.ca_file)},
        "cache": {"l2": "none"},
        "speculative": {"enabled": False},
    }
    async with ServerProcess(options) as server:
        server.open(URI, TEXT)
        assert await server.inline_text(URI, 1, 14) == '"Hello, " + name.title()'
        stats = await server.stats()
    path = {"ollama": "/api/generate", "llamacpp": "/infill", "openai": "/v1/completions"}[kind]
    assert stats["provider"] == {**stats["provider"], "configured": "auto", "detected": kind,
                                 "path": path}
    assert svc.completion_requests(path) == 1
    tokens = stats["tokens"]
    assert tokens["answers"] == 1
    assert tokens["prompt"] > 0 and tokens["generated"] > 0
    assert tokens["evaluated"] == tokens["prompt"]  # no KV cache in the reference service
    assert stats["upstreamErrors"] == 0


async def test_a_service_down_at_start_is_identified_when_it_comes_up(tmp_path: Path) -> None:
    corpus = tmp_path / "greet.py"
    corpus.write_text(CORPUS)
    port = free_port()
    now = [0.0]
    options = EndpointOptions(endpoint=f"http://127.0.0.1:{port}/v1", keep_warm_seconds=0)
    async with started_backend(options, clock=lambda: now[0]) as backend:
        assert backend.service()["detected"] is None
        assert backend.service()["path"] == "/v1/completions"  # the fallback until it answers
        extra = ["--identify-as", "ollama", "--port", str(port)]
        with ReferenceService(tls=False, corpus=[corpus], extra_args=extra) as svc:
            now[0] += REDETECT_SECONDS + 1
            assert await complete(backend, CompletionRequest(prefix=TEXT, suffix=""))
            assert backend.service()["detected"] == "ollama"
            assert backend.service()["path"] == "/api/generate"
            assert svc.completion_requests("/api/generate") == 1
