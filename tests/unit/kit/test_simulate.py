from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from lsp_server.kit.simulate import command as simulate_command
from lsp_server.kit.simulate import untimed as simulate
from lsp_server.kit.simulate.requests import collect_requests
from lsp_server.kit.simulate.strategies import STRATEGY_NAMES
from lsp_server.kit.simulate.untimed import DesignResult
from lsp_server.kit.synth.session import language_samples, sample_files, synthesize
from lsp_server.observe.trace.writer import write_trace

POLICIES = ["lru", "lfu", "arc", "lruk", "hybrid", "opt"]
CAPACITIES = [4, 16, 64]


def _trace(tmp_path: Path, files: list[Path], name: str = "t.jsonl") -> Path:
    # A short session: the first 60 lines of each file keep the test fast.
    texts = {
        p.as_uri(): "\n".join(p.read_text(encoding="utf-8").split("\n")[:60]) + "\n" for p in files
    }
    path = tmp_path / name
    write_trace(path, synthesize(texts, seed=5))
    return path


@pytest.fixture(scope="module")
def one_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trace(tmp_path_factory.mktemp("sim"), [sample_files()[0]])


@pytest.fixture(scope="module")
def two_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _trace(tmp_path_factory.mktemp("sim"), sample_files()[:2])


def _args(trace: Path, **over: object) -> argparse.Namespace:
    base = dict(
        trace=str(trace),
        policies=",".join(POLICIES),
        capacities=",".join(map(str, CAPACITIES)),
        strategies="scope",
        timed=False,
        ttft_ms=300.0,
        json=True,
        plot=None,
    )
    base.update(over)
    return argparse.Namespace(**base)


def test_json_output_has_exactly_the_design_shape(
    one_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate_command.run(_args(one_file)) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["capacities"] == CAPACITIES
    assert set(data["policies"]) == set(POLICIES)
    for figures in data["policies"].values():
        assert set(figures) == {"hitRatio", "upstreamRequests"}
        assert len(figures["hitRatio"]) == len(CAPACITIES)
        assert len(figures["upstreamRequests"]) == len(CAPACITIES)
        assert all(0.0 <= r <= 1.0 for r in figures["hitRatio"])
    assert set(data) <= {"capacities", "policies", "strategies", "requests"}


def _by_run(results: list[DesignResult]) -> dict[tuple[str, str | None, int | None], DesignResult]:
    return {(r.strategy, r.policy, r.capacity): r for r in results}


def test_opt_is_at_least_every_policy_at_every_capacity(two_files: Path) -> None:
    requests = collect_requests(two_files)
    runs = _by_run(
        simulate.simulate(
            requests, strategies=["scope", "position"], policies=POLICIES, capacities=CAPACITIES
        )
    )
    for strategy in ("scope", "position"):
        for capacity in CAPACITIES:
            best = runs[(strategy, "opt", capacity)].hits
            for policy in POLICIES:
                assert runs[(strategy, policy, capacity)].hits <= best, (strategy, policy)


def test_ideal_bounds_scope_and_never_serves_stale_text(two_files: Path) -> None:
    requests = collect_requests(two_files)
    runs = _by_run(
        simulate.simulate(
            requests, strategies=["scope", "ideal"], policies=["hybrid"], capacities=[1024]
        )
    )
    ideal = runs[("ideal", None, None)]
    scope = runs[("scope", "hybrid", 1024)]
    assert ideal.stale == 0
    assert ideal.hits >= scope.hits - scope.stale


def test_scope_hits_most_requests_and_is_mostly_useful(one_file: Path) -> None:
    requests = collect_requests(one_file)
    (result,) = simulate.simulate(requests, policies=["hybrid"], capacities=[256])
    assert result.hits > result.requests // 2
    assert result.useful > 0.9 * result.with_expect




def test_scope_serves_no_stale_text_within_one_file(one_file: Path) -> None:
    requests = collect_requests(one_file)
    (result,) = simulate.simulate(requests, policies=["hybrid"], capacities=[256])
    assert result.hits > result.requests // 2
    assert result.stale == 0


OTHER_SAMPLES = [p for p in language_samples() if p.suffix != ".py"]


@pytest.mark.parametrize("path", OTHER_SAMPLES, ids=[p.name for p in OTHER_SAMPLES])
def test_scope_keys_serve_no_stale_text_in_any_language(tmp_path: Path, path: Path) -> None:
    requests = collect_requests(_trace(tmp_path, [path]))
    (result,) = simulate.simulate(requests, policies=["hybrid"], capacities=[256])
    assert result.stale == 0
    assert result.hits > result.requests // 2


def test_scope_serves_no_stale_text_across_files(two_files: Path) -> None:
    requests = collect_requests(two_files)
    (result,) = simulate.simulate(requests, policies=["hybrid"], capacities=[256])
    assert result.stale == 0


def test_position_keys_serve_text_that_no_longer_fits(two_files: Path) -> None:
    requests = collect_requests(two_files)
    runs = _by_run(
        simulate.simulate(
            requests, strategies=["position", "scope"], policies=["lru"], capacities=[1024]
        )
    )
    assert runs[("position", "lru", 1024)].hits < runs[("scope", "lru", 1024)].hits


def test_every_strategy_runs_and_counts_add_up(two_files: Path) -> None:
    requests = collect_requests(two_files)
    results = simulate.simulate(
        requests, strategies=STRATEGY_NAMES, policies=["lru"], capacities=[64]
    )
    assert {r.strategy for r in results} == set(STRATEGY_NAMES)
    for r in results:
        assert r.hits + r.upstream == r.requests == len(requests)
        assert r.useful <= r.with_expect


def test_unknown_strategy_is_a_usage_error(one_file: Path) -> None:
    assert simulate_command.run(_args(one_file, strategies="scope,magic")) == 2


def test_plot_is_written_or_names_the_extra(
    one_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = tmp_path / "hit.png"
    code = simulate_command.run(_args(one_file, plot=str(png), json=False))
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 2
        assert "scopecache[plot]" in capsys.readouterr().err
    else:
        assert code == 0 and png.stat().st_size > 0


@pytest.fixture(scope="module")
def revisiting(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two files written with returns to earlier code (imports, earlier functions)."""
    files = sample_files()[:2]
    texts = {p.as_uri(): "\n".join(p.read_text().split("\n")[:60]) + "\n" for p in files}
    path = tmp_path_factory.mktemp("sim") / "revisits.jsonl"
    write_trace(path, synthesize(texts, seed=5, nonlinear=0.3))
    return path


def test_default_capacities_make_every_policy_evict(
    revisiting: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate_command.run(_args(revisiting, capacities=None)) == 0
    out = capsys.readouterr()
    data = json.loads(out.out)
    stored = simulate.working_set(collect_requests(str(revisiting)))
    assert data["capacities"] and max(data["capacities"]) < stored
    curves = {p: f["hitRatio"] for p, f in data["policies"].items() if p != "opt"}
    assert len({tuple(c) for c in curves.values()}) > 1, "the defaults must separate policies"
    assert "all policies identical" not in out.err


def test_identical_policies_are_called_out(
    one_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate_command.run(_args(one_file, capacities="100000")) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "all policies identical at these capacities: the working set fits" in err


def test_the_plot_draws_every_strategy_asked_for(two_files: Path) -> None:
    from lsp_server.kit.simulate.report import plot_series
    from lsp_server.kit.simulate.strategies import STRATEGY_NAMES

    requests = collect_requests(str(two_files))
    results = simulate.simulate(
        requests, strategies=STRATEGY_NAMES, policies=POLICIES, capacities=CAPACITIES
    )
    labels = [s.label for s in plot_series(results, CAPACITIES, POLICIES)]
    for strategy in STRATEGY_NAMES:
        if strategy != "scope":
            assert any(label.startswith(strategy) for label in labels), strategy
    assert "opt (ceiling)" in labels
    # a line hidden under another one says which
    curves = [s.ratios for s in plot_series(results, CAPACITIES, POLICIES)]
    if len(set(curves)) < len(curves):
        assert any("(= " in label for label in labels)
