from __future__ import annotations

from lsp_server.completion.inflight import DEFAULT_GRACE, MAX_GRACE, InflightRegistry
from lsp_server.completion.throttle import MissThrottle, in_first_word


def test_grace_follows_the_service_answer_time_within_bounds() -> None:
    registry = InflightRegistry()
    assert registry.grace == DEFAULT_GRACE
    registry.adapt_grace(0.8)
    assert registry.grace == 0.8
    registry.adapt_grace(0.01)
    assert registry.grace == DEFAULT_GRACE
    registry.adapt_grace(30.0)
    assert registry.grace == MAX_GRACE


def test_throttle_waits_nothing_at_line_start_and_adapts_elsewhere() -> None:
    now = [0.0]
    throttle = MissThrottle(min_delay=0.01, max_delay=0.2, clock=lambda: now[0])
    assert throttle.delay_for(at_line_start=True) == 0.0
    assert throttle.delay_for(at_line_start=False) == 0.2
    for _ in range(5):
        now[0] += 0.08
        throttle.note_keystroke("u")
    assert abs(throttle.delay_for(at_line_start=False) - 0.04) < 1e-9
    throttle.note_full_answer(0.1)
    assert abs(throttle.delay_for(at_line_start=False) - 0.025) < 1e-9
    assert throttle.full_answer == 0.1


def typed_at_120_ms() -> MissThrottle:
    """A throttle that has seen five keys of document ``u``, 0.12 s apart."""
    now = [0.0]
    throttle = MissThrottle(min_delay=0.01, max_delay=0.1, max_pause=0.6, clock=lambda: now[0])
    for _ in range(5):
        now[0] += 0.12
        throttle.note_keystroke("u")
    return throttle


def test_a_slow_service_makes_misses_wait_for_a_pause_in_the_typing() -> None:
    throttle = typed_at_120_ms()
    throttle.note_answer(0.05)  # answers faster than the typing: no pause
    assert not throttle.slow
    assert throttle.delay_for(at_line_start=False, uri="u") < 0.1
    for _ in range(5):
        throttle.note_answer(1.5)
    assert throttle.slow
    assert abs(throttle.delay_for(at_line_start=False, uri="u") - 0.24) < 1e-9
    # with nothing at the service the newest state goes as on a fast one
    assert throttle.delay_for(at_line_start=False, uri="u", service_idle=True) < 0.1
    throttle.max_pause = 0.0  # pacing off
    assert not throttle.slow


def test_on_a_slow_idle_server_the_first_word_of_a_line_waits_for_a_pause() -> None:
    throttle = typed_at_120_ms()
    for _ in range(5):
        throttle.note_answer(1.5)
    assert throttle.slow
    inside_word = throttle.delay_for(
        at_line_start=False, uri="u", service_idle=True, first_word=True
    )
    assert inside_word == throttle.pause()
    assert throttle.delay_for(at_line_start=False, uri="u", service_idle=True) < 0.1
    throttle.first_word_waits = False  # throttle.firstWordWaits = false
    assert throttle.delay_for(
        at_line_start=False, uri="u", service_idle=True, first_word=True
    ) < 0.1
    throttle.first_word_waits = True
    for _ in range(20):
        throttle.note_answer(0.05)  # a fast service: no pause anywhere
    assert not throttle.slow
    assert throttle.delay_for(
        at_line_start=False, uri="u", service_idle=True, first_word=True
    ) < 0.1


def test_the_first_word_is_indentation_then_word_characters_only() -> None:
    assert in_first_word("    ret")
    assert in_first_word("r")
    assert in_first_word("\tself_")
    assert not in_first_word("    ")
    assert not in_first_word("")
    assert not in_first_word("    return x")
    assert not in_first_word("    self.")
    assert not in_first_word("    x =")


def test_enter_asks_at_once_and_indentation_typed_by_hand_waits_for_a_pause() -> None:
    now = [0.0]
    throttle = MissThrottle(min_delay=0.01, max_delay=0.1, max_pause=0.6, clock=lambda: now[0])
    throttle.note_keystroke("u", new_line=True)
    assert throttle.delay_for(at_line_start=True, uri="u", indentation=True) == 0.0
    now[0] += 0.1
    throttle.note_keystroke("u")  # a space
    assert throttle.delay_for(at_line_start=True, uri="u", indentation=True) == throttle.pause()
    assert throttle.pause() >= 0.1
