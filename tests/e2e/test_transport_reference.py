"""The HTTP backend against the real reference service over TLS HTTP/2."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

import pytest

from tests.support.backend import REQUEST, cancel_task_mid_stream, complete, started_backend
from tests.support.reference import ReferenceService
from transport.backend import is_cut
from transport.errors import TLSError
from transport.http import HttpCompletionBackend
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e


def options_for(svc: ReferenceService, **changes: object) -> EndpointOptions:
    base = EndpointOptions(endpoint=svc.url, ca_file=str(svc.ca_file), keep_warm_seconds=0)
    return base.replace(**changes)


@pytest.fixture
async def backend(
    shared_reference_service: ReferenceService,
) -> AsyncIterator[HttpCompletionBackend]:
    async with started_backend(options_for(shared_reference_service)) as backend:
        yield backend


async def eventually(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


async def test_first_completion_after_start_opens_no_new_connection(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    before = shared_reference_service.stats()["connections"]
    assert await complete(backend)
    stats = shared_reference_service.stats()
    assert stats["connections"] == before
    assert backend.counters().connections_opened == 1
    assert stats["httpVersions"].get("2", 0) >= 1


async def test_fifty_concurrent_completions_share_one_connection(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    before = shared_reference_service.stats()["connections"]
    answers = await asyncio.gather(*(complete(backend) for _ in range(50)))
    assert all(answers)
    assert shared_reference_service.stats()["connections"] == before
    assert backend.counters().connections_opened == 1
    assert "HTTP/2" in repr(backend.transport)


async def test_cancel_mid_stream_resets_stream_and_keeps_connection(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    svc = shared_reference_service
    svc.set_fault("never-ending", 1, interval=0.02)
    before = svc.stats()
    stream = backend.stream(REQUEST)
    assert isinstance(stream, AsyncGenerator)  # closing it early is what the test is about
    assert await anext(stream)
    await stream.aclose()
    await eventually(lambda: svc.stats()["streamsCancelled"] == before["streamsCancelled"] + 1)
    assert await complete(backend)
    assert svc.stats()["connections"] == before["connections"]
    counters = backend.counters()
    assert counters.cancelled == 1 and counters.streams_reset == 1
    assert counters.connections_opened == 1


async def test_cancelling_the_task_resets_the_stream_too(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    svc = shared_reference_service
    svc.set_fault("never-ending", 1, interval=0.02)
    before = svc.stats()
    await cancel_task_mid_stream(backend)
    await eventually(lambda: svc.stats()["streamsCancelled"] == before["streamsCancelled"] + 1)
    assert await complete(backend)
    assert backend.counters().connections_opened == 1


async def test_finished_streams_are_not_counted_as_cancelled(
    shared_reference_service: ReferenceService, backend: HttpCompletionBackend
) -> None:
    before = shared_reference_service.stats()["streamsCancelled"]
    await asyncio.gather(*(complete(backend) for _ in range(20)))
    assert shared_reference_service.stats()["streamsCancelled"] == before
    assert backend.counters().streams_reset == 0


async def test_untrusted_certificate_fails_clearly(
    shared_reference_service: ReferenceService,
) -> None:
    async with started_backend(options_for(shared_reference_service, ca_file=None)) as backend:
        with pytest.raises(TLSError) as failure:
            await complete(backend)
        message = str(failure.value)
        assert "127.0.0.1" in message and "transport.caFile" in message
        assert backend.counters().retries == 0


@pytest.mark.parametrize("provider", ["llamacpp", "ollama"])
async def test_other_providers_stream_from_the_reference_service(
    shared_reference_service: ReferenceService, provider: str
) -> None:
    options = options_for(shared_reference_service, provider=provider)
    async with started_backend(options) as backend:
        assert await complete(backend)


async def test_http2_true_speaks_h2c_prior_knowledge_on_plain_http() -> None:
    with ReferenceService(tls=False) as svc:
        options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0, http2=True)
        async with started_backend(options) as backend:
            assert await complete(backend)
            assert svc.stats()["httpVersions"].get("2", 0) >= 1
            assert backend.counters().connections_opened == 1


async def test_auto_speaks_http1_on_plain_http() -> None:
    with ReferenceService(tls=False) as svc:
        options = EndpointOptions(endpoint=svc.url, keep_warm_seconds=0)
        async with started_backend(options) as backend:
            assert await complete(backend)
            assert svc.stats()["httpVersions"] == {"1.1": 1}


@pytest.mark.parametrize("provider", ["openai", "llamacpp", "ollama"])
async def test_an_answer_cut_at_max_tokens_arrives_marked_cut(
    shared_reference_service: ReferenceService, provider: str
) -> None:
    options = options_for(shared_reference_service, provider=provider)
    async with started_backend(options) as backend:
        chunks = [c async for c in backend.stream(dataclasses.replace(REQUEST, max_tokens=2))]
    assert "".join(chunks) and is_cut(chunks[-1])
    assert not any(is_cut(c) for c in chunks[:-1])
