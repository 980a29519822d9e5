"""The dashboard in a real headless Chromium, with live data from a real server process.

Needs the Debian packages ``chromium`` and ``chromium-driver`` and the
``selenium`` package; skipped with the reason when one is missing. The
screenshot is saved as ``test-artifacts/dashboard.png``.
"""

from __future__ import annotations

import asyncio
import math
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

from lsp_server.kit.client import ServerProcess
from tests.e2e.test_metrics_e2e import (
    URI,
    drive_completions,
    free_port,
    options,
    wait_for_endpoint,
    wait_for_samples,
)
from tests.support.reference import ReferenceService

pytestmark = pytest.mark.e2e

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
CHARTS = ("chart-hit", "chart-latency", "chart-ttft", "chart-saturation", "chart-acceptance")
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,1000",
)

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed")
if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
    pytest.skip(
        "Chromium not installed (apt-get install chromium chromium-driver)",
        allow_module_level=True,
    )

# Counts the non-transparent pixels of a canvas: proof that something was drawn.
PAINTED = """
const c = document.getElementById(arguments[0]);
const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
return n;
"""


def browse(
    url: str, screenshot: Path, *, with_data: bool = True, breakdowns: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Load the dashboard, wait for live charts, take a screenshot; returns what it saw.

    ``with_data``: wait until every chart has drawn something (else: three polls).
    ``breakdowns``: then choose each of these in the acceptance selector and
    keep the table it shows (``seen["by"][breakdown]``).
    """
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait

    profile = tempfile.mkdtemp(prefix="scopecache-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=CHROMEDRIVER))
    try:
        driver.set_page_load_timeout(30)
        driver.get(url)

        def ready(d: Any) -> bool:
            polls = int(d.find_element("tag name", "body").get_attribute("data-polls") or 0)
            points = [
                int(d.find_element("id", c).get_attribute("data-points") or 0) for c in CHARTS
            ]
            return polls >= 3 and (all(p > 0 for p in points) or not with_data)

        WebDriverWait(driver, 20, poll_frequency=0.2).until(ready)
        seen = {
            "title": driver.title,
            "painted": {c: driver.execute_script(PAINTED, c) for c in CHARTS},
            "settings": driver.find_element("id", "settings").text,
            "acceptance": driver.find_element("id", "acceptance").text,
            "heldBack": driver.find_element("id", "held-back").text,
            "hit": driver.find_element("id", "kpi-hit").text,
            "status": driver.find_element("id", "status").text,
            "ticks": {
                c: (driver.find_element("id", c).get_attribute("data-ticks") or "").split("|")
                for c in CHARTS
            },
            "empty": {c: driver.find_element("id", c).get_attribute("data-empty") for c in CHARTS},
            "errors": [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"],
        }
        seen["by"] = {}
        for by in breakdowns:
            from selenium.webdriver.support.ui import Select

            Select(driver.find_element("id", "acceptance-by")).select_by_value(by)
            seen["by"][by] = driver.find_element("id", "acceptance").text
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(screenshot))
        return seen
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


async def test_dashboard_renders_live_charts_in_headless_chromium(
    shared_reference_service: ReferenceService,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with ServerProcess(options(shared_reference_service, port)) as server:
        await wait_for_endpoint(base)
        await drive_completions(server)
        await accept_one(server)
        await wait_for_samples(base, "two signal samples", lambda history: len(history) >= 2)
        shot = ARTIFACTS / "dashboard.png"
        seen = await asyncio.to_thread(
            browse, f"{base}/?interval=250", shot, breakdowns=("language", "scope", "source")
        )

    assert seen["title"] == "scopecache dashboard"
    assert all(count > 0 for count in seen["painted"].values()), seen["painted"]
    assert "hybrid" in seen["settings"] and "endpoint" in seen["settings"]
    # the accept and retain rates by source: one of the exact hits was accepted
    columns = "shown accepted accepted chars kept 30 s kept 120 s typed through"
    assert f"source {columns}" in seen["acceptance"]
    assert "exact 3 1 (33%)" in seen["acceptance"], seen["acceptance"]
    # and by language and scope kind: the five suggestions were all in Python methods
    by = seen["by"]
    assert f"language {columns}" in by["language"]
    assert "python 5 1 (20%)" in by["language"], by["language"]
    assert "scope kind shown accepted" in by["scope"]
    assert "function_definition 5 1 (20%)" in by["scope"], by["scope"]
    assert "exact 3 1 (33%)" in by["source"], by["source"]
    # what was held back, by reason: nothing in this session
    assert "reason suggestions" in seen["heldBack"] and "unsure 0" in seen["heldBack"]
    assert seen["hit"] == "60%"  # three exact hits of five requests
    assert seen["status"].startswith("live")
    assert seen["errors"] == []
    assert shot.stat().st_size > 10_000
    for chart, ticks in seen["ticks"].items():
        assert_round_ticks(chart, ticks)


async def accept_one(server: ServerProcess) -> None:
    """Accept the suggestion of the first line ``drive_completions`` asks at (an exact hit)."""
    item = await server.inline(URI, 2, 15)
    assert item is not None and item.command is not None and item.command.arguments
    text = item.insert_text if isinstance(item.insert_text, str) else item.insert_text.value
    server.insert(URI, 2, 15, text)
    assert await server.accepted(item.command.arguments[0]) == {"known": True}


def assert_round_ticks(chart: str, ticks: list[str]) -> None:
    """Evenly spaced steps of 1, 2, 2.5 or 5 times a power of ten, from zero."""
    values = [float(t.rstrip("%")) for t in ticks]
    assert values[0] == 0 and len(values) >= 3, (chart, ticks)
    step = values[1]
    assert all(abs(v - i * step) < 1e-6 * step for i, v in enumerate(values)), (chart, ticks)
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1.0, 2.0, 2.5, 5.0), (chart, ticks)


async def test_a_dashboard_without_data_says_so_instead_of_zero_ticks(
    shared_reference_service: ReferenceService,
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    async with ServerProcess(options(shared_reference_service, port)):
        await wait_for_endpoint(base)
        shot = ARTIFACTS / "dashboard-empty.png"
        seen = await asyncio.to_thread(browse, f"{base}/?interval=250", shot, with_data=False)
    assert seen["errors"] == []
    assert seen["empty"]["chart-latency"] == "true"
    assert seen["ticks"]["chart-latency"] == ["0"]  # not 0.0 / 0.0 / 0.0 / 0.0 / 0.0
