"""The back-off of an endpoint configuration that could not be used."""

from __future__ import annotations

from lsp_server.server.endpoint_retry import EndpointRetry


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_failed_configuration_is_due_again_after_a_doubling_back_off() -> None:
    clock = Clock()
    retry = EndpointRetry(clock=clock, first_delay=1.0, max_delay=4.0)
    assert not retry.due()  # nothing failed
    retry.failed("cannot load transport.caFile")
    assert not retry.due()
    clock.now += 1.0
    assert retry.due()
    waits = []
    for _ in range(4):
        retry.begin()
        assert not retry.due()  # one attempt at a time
        retry.failed("still missing")
        start = clock.now
        while not retry.due():
            clock.now += 0.5
        waits.append(clock.now - start)
    assert waits == [2.0, 4.0, 4.0, 4.0]
    assert retry.problem == "still missing" and retry.attempts == 4


def test_success_forgets_the_problem_and_resets_the_back_off() -> None:
    clock = Clock()
    retry = EndpointRetry(clock=clock, first_delay=1.0)
    retry.failed("x")
    retry.failed("x")
    retry.succeeded()
    assert retry.problem is None and not retry.due()
    retry.failed("y")
    clock.now += 1.0
    assert retry.due()
    assert "failing" in repr(retry)
