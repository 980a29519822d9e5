from __future__ import annotations

from lsp_server.completion.inflight import DEFAULT_GRACE, MAX_GRACE, InflightRegistry
from lsp_server.completion.throttle import MissThrottle


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
    throttle.note_ttft(0.1)
    assert abs(throttle.delay_for(at_line_start=False) - 0.025) < 1e-9
    assert throttle.ttft == 0.1
