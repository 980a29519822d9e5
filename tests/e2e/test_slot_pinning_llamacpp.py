"""``completion.slotPinning`` on the real llama.cpp server (two slots).

The transport learns ``total_slots`` from ``/props``; a document's requests
then carry ``id_slot`` 0 and speculative prefetches ``id_slot`` 1. The
server's ``/slots`` shows which slot read which prompt (``n_prompt_tokens``
of each slot's last task).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.llamacpp import LlamaCppServer
from transport.backend import CompletionRequest
from transport.factory import build_backend
from transport.options import EndpointOptions

pytestmark = pytest.mark.e2e

DOCUMENT = "file:///w/a.py"


@pytest.fixture
def llama(tmp_path: Path) -> Any:
    with LlamaCppServer(tmp_path, batch=2048, embedding=128) as server:
        yield server


async def ask(backend: Any, prefix: str, *, speculative: bool = False) -> None:
    request = CompletionRequest(
        prefix=prefix, suffix="\n", max_tokens=2, document=DOCUMENT, speculative=speculative
    )
    async for _ in backend.stream(request):
        pass


def prompt_tokens(server: LlamaCppServer) -> list[int]:
    slots = sorted(server.slots(), key=lambda slot: slot["id"])
    return [slot.get("n_prompt_tokens", 0) for slot in slots]


async def test_a_documents_requests_stay_on_slot_0_and_prefetches_go_to_slot_1(
    llama: LlamaCppServer,
) -> None:
    options = EndpointOptions(endpoint=llama.url, provider="llamacpp", slot_pinning=True)
    backend = build_backend(options)
    await backend.start()
    try:
        await ask(backend, "def main(x):\n    return x" * 4)
        main_tokens, spare = prompt_tokens(llama)
        assert main_tokens > 0 and spare == 0
        assert backend.service().get("slots") == 2

        await ask(backend, "def ahead(y):\n    y = 1\n" * 8, speculative=True)
        after_prefetch = prompt_tokens(llama)
        assert after_prefetch[0] == main_tokens  # the main prompt's slot was left alone
        assert after_prefetch[1] > main_tokens

        # an idle slot 1 holding a longer prompt does not draw the document away
        await ask(backend, "def main(x):\n    return x" * 4 + "\n    pass")
        again = prompt_tokens(llama)
        assert again[0] > main_tokens
        assert again[1] == after_prefetch[1]
    finally:
        await backend.aclose()
