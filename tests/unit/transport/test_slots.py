"""Which llama.cpp slot each request is pinned to (``id_slot``)."""

from __future__ import annotations

import httpx

from transport.backend import CompletionRequest
from transport.options import EndpointOptions
from transport.providers import Provider, provider_for
from transport.service_detect import ServiceProfile, detect_service
from transport.slots import MAX_DOCUMENTS, SlotPlan


def test_documents_get_the_main_slots_round_robin_and_keep_theirs() -> None:
    plan = SlotPlan(4)
    assert [plan.slot_for(uri) for uri in ("a", "b", "c", "d", "a", "c")] == [0, 1, 2, 0, 0, 2]


def test_speculative_prefetches_go_to_the_last_slot_which_no_document_owns() -> None:
    plan = SlotPlan(3)
    main = {plan.slot_for(f"file:///{n}.py") for n in range(10)}
    assert main == {0, 1}
    assert plan.slot_for("file:///0.py", speculative=True) == 2


def test_two_slots_give_every_document_slot_0_and_prefetches_slot_1() -> None:
    plan = SlotPlan(2)
    assert [plan.slot_for(u) for u in ("a", "b")] == [0, 0]
    assert plan.slot_for("a", speculative=True) == 1


def test_one_slot_or_an_unknown_count_leaves_the_choice_to_the_server() -> None:
    for slots in (0, 1):
        plan = SlotPlan(slots)
        assert plan.slot_for("a") is None
        assert plan.slot_for("a", speculative=True) is None
    assert SlotPlan(3).slot_for("") is None


def test_the_least_recently_used_document_is_forgotten_past_the_bound() -> None:
    plan = SlotPlan(3)
    assert plan.slot_for("first") == 0
    plan.slot_for("kept")  # slot 1, and used again below
    for n in range(MAX_DOCUMENTS - 1):
        plan.slot_for(f"other{n}")
        plan.slot_for("kept")
    # "first" was forgotten and is assigned afresh; "kept" was not
    assert plan.slot_for("kept") == 1
    assert plan.slot_for("first") == (2 + MAX_DOCUMENTS - 1) % 2


REQUEST = CompletionRequest(prefix="def f(", suffix=")\n", document="file:///w/a.py")


def llamacpp(slots: int, *, pinning: bool = True) -> Provider:
    options = EndpointOptions(endpoint="http://127.0.0.1:8080", provider="llamacpp",
                              slot_pinning=pinning)
    return provider_for(options, ServiceProfile(kind="llamacpp", path="/infill", slots=slots))


def test_infill_body_carries_id_slot_with_pinning_on_and_several_slots() -> None:
    provider = llamacpp(3)
    _, main = provider.build_request(REQUEST)
    _, ahead = provider.build_request(
        CompletionRequest(prefix="x", suffix="", document=REQUEST.document, speculative=True)
    )
    assert (main["id_slot"], ahead["id_slot"]) == (0, 2)


def test_infill_body_has_no_id_slot_with_pinning_off_or_one_slot() -> None:
    for provider in (llamacpp(3, pinning=False), llamacpp(1)):
        _, body = provider.build_request(REQUEST)
        assert "id_slot" not in body


async def test_props_total_slots_is_learnt_at_identification() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/props":
            return httpx.Response(200, json={"total_slots": 4}, headers={"Server": "llama.cpp"})
        return httpx.Response(404, headers={"Server": "llama.cpp"})

    options = EndpointOptions(endpoint="http://127.0.0.1:8080", provider="llamacpp")
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as client:
        profile = await detect_service(client, options)
    assert profile is not None and profile.slots == 4
    assert profile.to_json()["slots"] == 4
