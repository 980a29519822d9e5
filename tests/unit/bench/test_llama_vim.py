"""The llama.vim emulation the slow-model benchmark compares with, on hand-made buffers.

The ``/infill`` server is a fake at the emulation's own seam (``post``): it
hands each request body to the test and answers what the test gives it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from tests.support.conditions import until
from tests.support.llama_vim import (
    MAX_CACHE_KEYS,
    LlamaVimClient,
    ResultCache,
    hint_for,
    infill_body,
    local_context,
)

TEXT = "import os\nvalue = \nprint(value)\n"


class FakeInfill:
    """Hands request bodies to the test; answers what the test puts in ``answers``."""

    def __init__(self) -> None:
        self.bodies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.answers: asyncio.Queue[str | None] = asyncio.Queue()

    async def __call__(self, body: dict[str, Any]) -> str | None:
        await self.bodies.put(body)
        return await self.answers.get()

    async def next_body(self) -> dict[str, Any]:
        return await asyncio.wait_for(self.bodies.get(), 30)


async def _answered(client: LlamaVimClient, count: int) -> None:
    async def done() -> bool:
        return client.finished >= count and client._job is None

    await until(done, f"{count} answers handled")


def _type(client: LlamaVimClient, char: str) -> None:
    line, character = client.cursor
    client.edit((line, character, line, character, char), line, character + len(char))
    client.moved()


def test_the_first_request_for_a_place_is_llama_vims_short_one() -> None:
    lines = TEXT.split("\n")
    body = infill_body(local_context(lines, 1, 8, [], -1), speculative=False)
    assert body["input_prefix"] == "import os\n"
    assert body["prompt"] == "value = "
    assert body["input_suffix"] == "\nprint(value)\n\n"
    assert body["t_max_predict_ms"] == 250 and body["t_max_prompt_ms"] == 500
    assert (body["top_k"], body["top_p"]) == (40, 0.90)
    assert body["samplers"] == ["top_k", "top_p", "infill"]
    assert body["n_predict"] == 128 and body["cache_prompt"] and not body["stream"]
    assert body["n_indent"] == 0 and body["input_extra"] == [] and body["id_slot"] == 0
    speculative = infill_body(local_context(lines, 1, 8, ["x"], 0), speculative=True)
    assert speculative["t_max_predict_ms"] == 1000
    greedy = infill_body(local_context(lines, 1, 8, [], -1), speculative=False, greedy=True)
    assert greedy["temperature"] == 0.0 and "samplers" not in greedy and "top_p" not in greedy


def test_a_blank_line_is_sent_empty_and_an_accepted_suggestion_as_if_inserted() -> None:
    lines = ["def f():", "    ", "x = 1"]
    blank = local_context(lines, 1, 4, [], -1)
    assert (blank.prefix, blank.middle, blank.indent) == ("def f():\n", "", 0)
    accepted = local_context(lines, 1, 4, ["a = 1", "    b = 2", "    c"], 4)
    assert accepted.prefix == "def f():\n    a = 1\n    b = 2\n"
    assert (accepted.middle, accepted.indent) == ("    c", 4)
    assert accepted.suffix == "\nx = 1\n"


def test_the_cache_keys_drop_one_to_three_first_lines_of_the_prefix() -> None:
    lines = ["a", "b", "c", "d", "e", "x = "]
    keys = local_context(lines, 5, 4, [], -1).keys()
    assert len(keys) == 4
    assert keys[0].startswith("a\nb\n") and keys[3].startswith("d\ne\nx = ")


def test_the_result_cache_drops_the_least_recently_used() -> None:
    cache = ResultCache()
    for i in range(MAX_CACHE_KEYS):
        cache.put(str(i), "answer")
    assert cache.get("0") == "answer"  # now the most recent
    cache.put("new", "answer")
    assert len(cache) == MAX_CACHE_KEYS
    assert cache.get("1") is None and cache.get("0") == "answer"


def test_what_only_repeats_the_next_line_or_whitespace_is_not_shown() -> None:
    lines = ["def f():", "    ", "    return 1"]
    assert hint_for(lines, 1, 4, "    return 1").text is None
    assert hint_for(lines, 1, 4, "    return 2").text == "return 2"  # the indentation trimmed
    assert hint_for(lines, 1, 4, "   \n  ").text is None
    assert hint_for(["x = f("], 0, 6, "a)").text == "a)"


async def test_an_answer_is_shown_then_asked_again_as_accepted_with_the_long_limit() -> None:
    infill = FakeInfill()
    client = LlamaVimClient(TEXT, infill)
    client.edit((1, 8, 1, 8, ""), 1, 8)
    _type(client, "o")
    first = await infill.next_body()
    assert (first["prompt"], first["t_max_predict_ms"]) == ("value = o", 250)
    _type(client, "s")  # a request runs: no second one, a retry instead
    assert client.requests == 1
    await infill.answers.put("s.getcwd()")
    await _answered(client, 1)
    # typed into: the rest shows, and the place is asked as if it were accepted
    assert client.hint is not None and client.hint.text == ".getcwd()"
    speculative = await infill.next_body()
    assert (speculative["prompt"], speculative["t_max_predict_ms"]) == ("value = os.getcwd()", 1000)
    assert client.speculative == 1


async def test_a_place_already_cached_is_not_asked() -> None:
    infill = FakeInfill()
    client = LlamaVimClient(TEXT, infill)
    client.edit((1, 8, 1, 8, ""), 1, 8)
    _type(client, "o")
    await infill.next_body()
    await infill.answers.put("s")
    await _answered(client, 1)
    speculative = await infill.next_body()  # "value = os", as if accepted
    assert speculative["prompt"] == "value = os"
    await infill.answers.put(".getcwd()")
    await _answered(client, 2)
    asked = client.requests
    _type(client, "s")  # the speculative request's place: its answer shows at once
    assert client.hint is not None and client.hint.text == ".getcwd()"
    # showing it asks the next speculative place; the place typed is not asked
    following = await infill.next_body()
    assert following["prompt"] == "value = os.getcwd()"
    await infill.answers.put("")
    await _answered(client, 3)

    async def retried() -> bool:
        return client._retry is None

    await until(retried, "the typed place's retry to run")
    assert client.requests == asked + 1


async def test_while_a_request_runs_the_newest_place_is_asked_when_it_ends() -> None:
    infill = FakeInfill()
    client = LlamaVimClient(TEXT, infill)
    client.edit((1, 8, 1, 8, ""), 1, 8)
    _type(client, "o")
    await infill.next_body()
    for char in "s.g":
        _type(client, char)
    assert client.requests == 1
    await infill.answers.put(None)  # no usable answer: nothing cached, nothing shown
    retried = await infill.next_body()
    assert (retried["prompt"], retried["t_max_predict_ms"]) == ("value = os.g", 250)
    assert client.hint is None
    await infill.answers.put("")
    await client.close()
