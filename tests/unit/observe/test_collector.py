"""The cycle collector's full passes are counted and timed; younger ones are not."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from lsp_server.observe.collector import CollectorPauses


class Ticks:
    """A clock that advances by ``step`` seconds each time it is read."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def pauses() -> Iterator[CollectorPauses]:
    recorder = CollectorPauses(Ticks(0.004))
    yield recorder
    recorder.uninstall()


def test_a_full_pass_is_timed_from_its_start_to_its_end(pauses: CollectorPauses) -> None:
    pauses("start", {"generation": 2})
    pauses("stop", {"generation": 2, "collected": 0})
    snapshot = pauses.snapshot()
    assert snapshot["fullPasses"] == 1
    assert snapshot["fullPauseMs"] == {"last": 4.0, "max": 4.0, "total": 4.0}


def test_younger_generations_are_not_counted(pauses: CollectorPauses) -> None:
    for generation in (0, 1):
        pauses("start", {"generation": generation})
        pauses("stop", {"generation": generation, "collected": 3})
    assert pauses.full_passes == 0
    assert pauses.longest_s == 0.0


def test_an_end_without_its_start_is_not_a_pass(pauses: CollectorPauses) -> None:
    pauses("stop", {"generation": 2, "collected": 0})  # installed during a pass
    assert pauses.full_passes == 0


def test_installed_it_sees_the_real_collector_and_uninstalled_it_does_not(
    pauses: CollectorPauses,
) -> None:
    pauses.install()
    pauses.install()
    assert gc.callbacks.count(pauses) == 1
    gc.collect()
    seen = pauses.full_passes
    assert seen >= 1
    pauses.uninstall()
    gc.collect()
    assert pauses.full_passes == seen
    assert pauses not in gc.callbacks
