"""Fixtures shared by the end-to-end tests: the reference service over the greet corpus."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from lsp_server.kit.upstream_process import ReferenceProcess
from tests.support.greet import CORPUS
from tests.support.llamacpp import LlamaCppServer, missing_reason
from tests.support.reference import ReferenceService


@pytest.fixture
async def greet_process(tmp_path: Path) -> AsyncIterator[ReferenceProcess]:
    """A fresh reference service (TLS, HTTP/2) over the greet corpus, for one test."""
    corpus = tmp_path / "greet_corpus.py"
    corpus.write_text(CORPUS)
    async with ReferenceProcess([corpus]) as service:
        yield service


@pytest.fixture(scope="module")
def greet_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReferenceService]:
    """One reference service over the greet corpus for a whole module."""
    corpus = tmp_path_factory.mktemp("corpus") / "greet.py"
    corpus.write_text(CORPUS)
    with ReferenceService(tls=True, corpus=[corpus]) as service:
        yield service


@pytest.fixture
def upstream(greet_service: ReferenceService) -> ReferenceService:
    """The module's greet service with counters, faults and latency reset."""
    greet_service.reset()
    return greet_service


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaCppServer]:
    """A real llama.cpp server over a tiny random-weight model, for the whole session.

    Skipped with the reason where the xllamacpp wheel is missing, except in CI
    (``CI`` set), where that is a failure: CI must run these tests.
    """
    reason = missing_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    with LlamaCppServer(tmp_path_factory.mktemp("llamacpp")) as server:
        yield server
