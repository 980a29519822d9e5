"""``scopecache diagnose`` pieces: limits and verdicts, the sample, encoding maths, hints.

The service probe is driven through httpx's own fake transport
(``httpx.MockTransport``) at the client seam it takes; the end-to-end tests
run the whole command against the real reference service.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from lsp_server.cli import build_parser
from lsp_server.diagnose.client import cache_measurement, hit_ratio
from lsp_server.diagnose.command import diagnose
from lsp_server.diagnose.encoding import encoding_measurements
from lsp_server.diagnose.errors import explain_status
from lsp_server.diagnose.report import LAYERS, Limit, Report, failing, info, judged, skipped
from lsp_server.diagnose.sample import (
    PromptSample,
    SampleError,
    builtin_sample,
    file_sample,
    split_at_cursor,
)
from lsp_server.diagnose.service import ServiceProbe, StreamTiming, decode_rate, diagnose_service
from lsp_server.observe.stats import ServerStats
from lsp_server.settings import Settings
from transport import errors
from transport.options import EndpointOptions

OPTIONS = EndpointOptions(endpoint="https://llm.example/v1", api_key_env="DIAG_UNIT_KEY")


def test_lower_is_better_limit_is_ok_below_slow_above_failing_past_the_hard_limit() -> None:
    limit = Limit(300.0, failing=2000.0)
    assert [limit.judge(v) for v in (10.0, 300.0, 1999.0, 2000.0)] == [
        "ok", "slow", "slow", "failing"
    ]  # fmt: skip
    assert limit.describe() == "< 300 ms"


def test_higher_is_better_limit_and_ratio_units_describe_themselves() -> None:
    rate = Limit(30.0, unit="tok/s", higher_is_better=True)
    assert (rate.judge(31.0), rate.judge(29.0)) == ("ok", "slow")
    assert rate.describe() == ">= 30 tok/s"
    assert Limit(1.8, unit="x").describe() == "< 1.8x"


def test_hint_is_kept_only_when_the_verdict_is_not_ok() -> None:
    assert judged("tls", 20.0, Limit(100.0), "far away").hint is None
    slow = judged("tls", 420.0, Limit(100.0), "far away")
    assert (slow.verdict, slow.hint, slow.threshold) == ("slow", "far away", "< 100 ms")


def test_report_verdict_is_the_worst_and_skipped_items_do_not_count() -> None:
    report = Report("https://x/v1")
    seen = []
    report.add("network", info("alpn", "h2"), skipped("dns", "literal"))
    seen.append(report.verdict)
    report.add("service", judged("ttft (p50)", 900.0, Limit(300.0), "overloaded"))
    seen.append(report.verdict)
    report.add("client", failing("cache hit ratio", "unreadable"))
    seen.append(report.verdict)
    assert seen == ["ok", "slow", "failing"]
    assert report.layer_verdict("network") == "ok"


def test_a_report_with_nothing_measured_is_failing() -> None:
    report = Report(None)
    report.skip_rest(LAYERS, "no endpoint")
    assert report.verdict == "failing"


def test_json_items_have_exactly_the_documented_keys() -> None:
    report = Report("https://x/v1")
    report.add("network", judged("rtt estimate", 12.3456, Limit(50.0), "far"))
    data = report.to_json()
    assert set(data["layers"]) == set(LAYERS)
    (item,) = data["layers"]["network"]
    assert item == {"name": "rtt estimate", "value": 12.346, "unit": "ms",
                    "threshold": "< 50 ms", "verdict": "ok", "hint": None}  # fmt: skip
    assert data["endpoint"] == "https://x/v1" and data["verdict"] == "ok"


def test_cursor_goes_inside_a_line_about_four_fifths_in() -> None:
    text = "".join(f"line_{i} = compute({i})\n" for i in range(100))
    prefix, suffix = split_at_cursor(text)
    assert prefix + suffix == text
    assert 0.75 < len(prefix) / len(text) < 0.85
    assert not prefix.endswith("\n") and not suffix.startswith("\n")


def test_builtin_sample_is_python_and_a_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    sample = builtin_sample()
    assert sample.language == "python" and sample.prefix and sample.suffix
    with pytest.raises(SampleError, match="cannot read --file"):
        file_sample(str(tmp_path / "nope.py"))


@pytest.mark.parametrize(
    ("name", "language"),
    [("x.go", "go"), ("view.tsx", "typescriptreact"), ("lib.rs", "rust"), ("notes.txt", "txt")],
)
def test_a_file_sample_has_its_files_language(tmp_path: Path, name: str, language: str) -> None:
    path = tmp_path / name
    path.write_text("first line of text\nsecond line of text\nthird line of text\n")
    assert file_sample(str(path)).language == language


def test_inflation_is_tokens_over_a_quarter_of_the_characters() -> None:
    sample = PromptSample("a" * 300, "b" * 100, "python", "test")
    items = {m.name: m for m in encoding_measurements(OPTIONS, sample, 150)}
    assert items["prompt characters"].value == 400
    assert items["token inflation"].value == pytest.approx(1.5)
    assert items["token inflation"].verdict == "ok"
    assert items["prefix window used"].value == pytest.approx(7.5)  # 300 of 4000
    assert items["suffix window used"].value == pytest.approx(10.0)  # 100 of 1000
    assert items["full window"].value == round(5000 * 150 / 400)
    assert encoding_measurements(OPTIONS, sample, 300)[2].verdict == "slow"  # 3.0x


def test_encoding_says_so_when_the_service_does_not_report_usage() -> None:
    sample = PromptSample("x = 1\n", "", "python", "test")
    items = {m.name: m for m in encoding_measurements(OPTIONS, sample, None)}
    assert items["prompt tokens"].verdict == "skipped"
    assert "does not report prompt tokens" in (items["prompt tokens"].hint or "")


def test_401_hint_names_the_key_variable_never_its_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAG_UNIT_KEY", "sk-very-secret")
    hint = explain_status(401, OPTIONS)
    assert "apiKeyEnv" in hint and "DIAG_UNIT_KEY, which is set" in hint
    assert "sk-very-secret" not in hint
    monkeypatch.delenv("DIAG_UNIT_KEY")
    assert "which is not set" in explain_status(403, OPTIONS)


def test_404_hint_names_base_url_and_provider() -> None:
    hint = explain_status(404, OPTIONS.replace(provider="ollama"))
    assert "base URL or provider" in hint and "/api/generate" in hint


def test_decode_rate_counts_chunks_after_the_first() -> None:
    timings = [StreamTiming(0.1, 0.6, 11), StreamTiming(0.1, 0.1, 1)]
    assert decode_rate(timings) == pytest.approx(10 / 0.5)
    assert decode_rate([StreamTiming(0.1, 0.2, 1)]) is None


def test_hit_ratio_from_a_server_stats_snapshot(tmp_path: Path) -> None:
    stats = ServerStats()
    stats.requests = 4
    for source in ("exact", "typed", "upstream", "upstream"):
        stats.record_served(source, 1.0)
    snapshot = stats.snapshot()
    assert hit_ratio(snapshot) == pytest.approx(0.5)
    del snapshot["hitRatio"]
    assert hit_ratio(snapshot) == pytest.approx(0.5)
    assert hit_ratio(ServerStats().snapshot()) is None
    path = tmp_path / "stats.json"
    path.write_text(json.dumps(stats.snapshot()))
    measured = cache_measurement(str(path))
    assert (measured.value, measured.unit, measured.verdict) == (50.0, "%", "ok")


def test_cache_measurement_without_source_or_with_a_bad_one() -> None:
    assert cache_measurement(None).verdict == "skipped"
    bad = cache_measurement("/nonexistent/stats.json")
    assert bad.verdict == "failing" and "cannot read server stats" in (bad.hint or "")


def test_cli_declares_the_diagnose_options() -> None:
    args = build_parser().parse_args(["diagnose", "--endpoint", "https://h/v1", "--json"])
    assert (args.endpoint, args.samples, args.json, args.file, args.metrics_url) == (
        "https://h/v1", 5, True, None, None
    )  # fmt: skip
    assert args.module == "lsp_server.diagnose.command"


async def test_no_endpoint_is_a_failing_report_with_the_fix() -> None:
    report = await diagnose(Settings(), sample=builtin_sample(), samples=1)
    assert report.verdict == "failing"
    (item,) = report.layers["network"]
    assert "--endpoint" in (item.hint or "")


def _sse(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + (
        b"data: [DONE]\n\n"
    )


def _fake_service(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    if request.url.path.endswith("/chat/completions"):
        return httpx.Response(404, json={"error": "no chat"})
    if not body["stream"]:
        return httpx.Response(200, json={"choices": [{"text": "x"}]})  # no usage
    text = [{"choices": [{"text": t, "finish_reason": None}]} for t in ("re", "turn", " x")]
    done = {"choices": [{"text": "", "finish_reason": "stop"}]}
    sse = _sse(*text, done)
    return httpx.Response(200, content=sse, headers={"content-type": "text/event-stream"})


async def test_probe_reads_streams_and_skips_chat_the_service_does_not_offer() -> None:
    sample = PromptSample("def f():\n    ", "\n", "python", "test")
    async with httpx.AsyncClient(transport=httpx.MockTransport(_fake_service)) as client:
        probe = ServiceProbe(OPTIONS, client, {})
        assert await probe.prompt_tokens(sample) is None
        timing = await probe.stream_completion(sample)
        assert timing.chunks == 3 and timing.total >= timing.ttft >= 0
        measurements, ttft = await diagnose_service(probe, sample, 2)
    names = {m.name: m for m in measurements}
    assert names["chat ttft (p50)"].verdict == "skipped"
    assert ttft == names["ttft (p50)"].value


async def test_probe_maps_refused_credentials_to_auth_rejected() -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(401, json={"error": "no"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(refuse)) as client:
        probe = ServiceProbe(OPTIONS, client, {})
        with pytest.raises(errors.AuthRejected):
            await probe.prompt_tokens(PromptSample("x", "", "python", "t"))


@pytest.mark.parametrize(
    ("provider", "body", "tokens"),
    [
        ("openai", {"choices": [{"text": ""}], "usage": {"prompt_tokens": 12}}, 12),
        ("llamacpp", {"content": "", "tokens_evaluated": 7}, 7),
        ("ollama", {"response": "", "prompt_eval_count": 9}, 9),
    ],
)
async def test_prompt_tokens_are_read_in_each_provider_shape(
    provider: str, body: dict[str, Any], tokens: int
) -> None:
    options = OPTIONS.replace(provider=provider)
    transport = httpx.MockTransport(lambda _r: httpx.Response(200, json=body))
    async with httpx.AsyncClient(transport=transport) as client:
        probe = ServiceProbe(options, client, {})
        assert await probe.prompt_tokens(PromptSample("x", "", "python", "t")) == tokens


def test_transport_overhead_is_never_negative_and_carries_its_bound() -> None:
    from lsp_server.diagnose.client import overhead_measurement

    faster = overhead_measurement([-4.1, -3.0, -2.2, -5.0, -1.0, -3.3, -2.9])
    assert faster.value == 0.0 and faster.verdict == "ok"
    assert "90% bound 0.0-0.0 ms" in (faster.hint or "")


def test_one_slow_pair_does_not_make_the_overhead_slow() -> None:
    from lsp_server.diagnose.client import overhead_measurement

    noisy = overhead_measurement([0.4, 0.6, 29.1, 0.5, 0.3, 0.7, 0.2])
    assert noisy.verdict == "ok" and noisy.value < 1.0


def test_an_overhead_over_the_limit_in_every_pair_is_slow() -> None:
    from lsp_server.diagnose.client import overhead_measurement

    slow = overhead_measurement([25.0, 31.0, 28.0, 30.0, 27.0, 29.0, 26.0])
    assert slow.verdict == "slow" and slow.value == 28.0
    assert "adds 28 ms" in (slow.hint or "")


def test_the_median_bound_widens_to_min_and_max_for_few_samples() -> None:
    from lsp_server.diagnose.client import median_bounds

    assert median_bounds([3.0, 1.0, 2.0, 5.0, 4.0]) == (3.0, 1.0, 5.0)
    median, low, high = median_bounds([float(v) for v in range(1, 21)])
    assert low > 1.0 and high < 20.0 and low <= median <= high
