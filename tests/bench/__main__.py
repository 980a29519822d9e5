"""``make bench``: every benchmark, one markdown table of ratios (or ``--json``).

Each row is measured against a baseline in the same run; nothing here
asserts a time. ``--quick`` runs small sizes (CI runs it so the suite never
rots); ``--only NAME[,NAME]`` picks suites.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from typing import Any

SUITES = (
    "keystroke", "languages", "cache", "server", "hitpath", "transport", "http1", "l2", "replay",
    "llamacpp", "kvcache",
)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.3f}" if abs(value) < 100 else f"{value:,.0f}"
    return "" if value is None else str(value)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as one markdown table."""
    lines = [
        "| suite | measure | value | baseline | ratio | unit |",
        "|---|---|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            "| {suite} | {name} | {value} | {baseline} | {ratio} | {unit} |".format(
                suite=row.get("suite", ""),
                name=row["name"],
                value=_fmt(row.get("value")),
                baseline=_fmt(row.get("baseline")),
                ratio=_fmt(row.get("ratio")),
                unit=row.get("unit", ""),
            )
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the suites and print the table."""
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("--quick", action="store_true", help="small sizes, for CI")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", default=",".join(SUITES))
    args = parser.parse_args(argv)
    rows: list[dict[str, Any]] = []
    failed = []
    for suite in [s for s in args.only.split(",") if s]:
        started = time.perf_counter()
        print(f"running {suite} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"tests.bench.bench_{suite}")
            for row in module.run(quick=args.quick):
                rows.append({"suite": suite, **row})
        except Exception as exc:  # one broken suite must not hide the others
            failed.append(suite)
            print(f"  {suite} failed: {exc!r}", file=sys.stderr)
        print(f"  {suite}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if args.json:
        json.dump({"rows": rows, "failed": failed}, sys.stdout, indent=1)
        print()
    else:
        print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
