"""``make bench``: every benchmark, one markdown table of ratios (or ``--json``).

Each row is measured against a baseline in the same run; nothing here
asserts a time. ``--quick`` runs small sizes (CI runs it so the suite never
rots); ``--long`` adds the long rows (a suite's ``run`` that takes ``long``
gets it; the suites in ``LONG_SUITES`` run only then); ``--only
NAME[,NAME]`` picks suites. Each suite's seconds go to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import sys
import time
from typing import Any

from tests.bench.rows import significant

SUITES = (
    "keystroke", "languages", "cache", "server", "hitpath", "transport", "http1", "l2", "replay",
    "llamacpp", "kvcache", "slow_model",
)
#: suites made of long rows only: run with ``--long`` (or named in ``--only``)
LONG_SUITES: tuple[str, ...] = ()
#: suites left out of ``--quick`` unless named in ``--only``: minutes of a real
#: model's time (CI runs ``--quick --only slow_model`` as a step of its own)
NOT_QUICK: tuple[str, ...] = ("slow_model",)


def _fmt(value: Any) -> str:
    """A figure as ``tests.bench.rows`` rounded it; a missing one as ``-``."""
    if value is None:
        return "-"
    if isinstance(value, float):
        figure = significant(value)
        if figure is None:
            return "-"
        return f"{figure:,.0f}" if abs(figure) >= 100 else f"{figure:,}"
    return f"{value:,}" if isinstance(value, int) else str(value)


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
    parser.add_argument("--long", action="store_true", help="add the long rows and suites")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--only", help="comma-separated suites (default: all)")
    args = parser.parse_args(argv)
    if args.only:
        suites = [s for s in args.only.split(",") if s]
    else:
        suites = [*SUITES, *(LONG_SUITES if args.long else ())]
        if args.quick:
            suites = [s for s in suites if s not in NOT_QUICK]
    rows: list[dict[str, Any]] = []
    failed = []
    total = time.perf_counter()
    for suite in suites:
        started = time.perf_counter()
        print(f"running {suite} ...", file=sys.stderr, flush=True)
        try:
            module = importlib.import_module(f"tests.bench.bench_{suite}")
            options = {"quick": args.quick}
            if "long" in inspect.signature(module.run).parameters:
                options["long"] = args.long
            for row in module.run(**options):
                rows.append({"suite": suite, **row})
        except Exception as exc:  # one broken suite must not hide the others
            failed.append(suite)
            print(f"  {suite} failed: {exc!r}", file=sys.stderr)
        print(f"  {suite}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print(f"all suites: {time.perf_counter() - total:.1f} s", file=sys.stderr)
    if args.json:
        json.dump({"rows": rows, "failed": failed}, sys.stdout, indent=1)
        print()
    else:
        print(table(rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
