"""What the model's confidence and longer, surer answers cost the server and save the developer.

The slow-model benchmark's session and server (``bench_slow_model``: the
real code model on llama.cpp, two threads, one slot), typed into the real
``scopecache serve`` once per variant, each against a freshly started server:

- ``without``: ``completion.confidence`` off, as before probabilities;
- ``confidence``: the defaults: probabilities asked for and cut by;
- ``run-on``: and a sure answer runs on past its line (``completion.runOn``).

Rows: the session score of each (``SessionScore``), side by side.

Run: ``.venv/bin/python -m tests.bench.confidence_ab [--long] [--only NAME,...]``.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from tests.support.code_model import ensure
from tests.support.typing_session import (
    SessionScore,
    code_model_server,
    code_model_session,
    run_scopecache,
    scopecache_settings,
)

VARIANTS: dict[str, dict[str, Any]] = {
    "without": {"confidence": False},
    "confidence": {},
    "run-on": {"runOn": True},
}
FIELDS = (
    "shown", "useful_keys", "wrong_keys", "useful_suggestions", "chars_saved_line",
    "chars_saved_lines", "new_latency_p50", "new_latency_p90", "busy_seconds",
    "seconds_per_useful", "requests",
)  # fmt: skip


async def _variant(script: Any, model: Path, completion: dict[str, Any]) -> SessionScore:
    with tempfile.TemporaryDirectory() as tmp, code_model_server(Path(tmp), model) as server:
        settings = {**scopecache_settings(server.url), "completion": completion}
        run = await run_scopecache(script, settings, busy_url=server.url)
    score = SessionScore.of(run)
    held = run.extra.get("stats", {}).get("heldBack", {})
    print(f"held back: {held}", file=sys.stderr)
    return score


def main(argv: list[str]) -> int:
    """Run the variants and print their scores side by side."""
    long = "--long" in argv
    only = next((a.split("=", 1)[1] for a in argv if a.startswith("--only=")), "")
    names = [n for n in VARIANTS if not only or n in only.split(",")]
    script = code_model_session("full" if long else "short")
    model = ensure()
    scores = {name: asyncio.run(_variant(script, model, VARIANTS[name])) for name in names}
    print("figure".ljust(24) + "".join(name.rjust(12) for name in names))
    for field in FIELDS:
        values = [getattr(scores[name], field) for name in names]
        cells = "".join(
            "-".rjust(12) if v is None else f"{v:12.3f}" if isinstance(v, float) else f"{v:12d}"
            for v in values
        )
        print(field.ljust(24) + cells)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
