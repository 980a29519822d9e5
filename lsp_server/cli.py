"""The ``scopecache`` command line.

Each subcommand's arguments are declared here (they are a public contract);
the work is done by ``run(args) -> int`` in the module that owns the feature,
imported only when that subcommand runs so ``scopecache serve`` starts fast.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Any

from lsp_server.kit.reference.options import EPILOG as UPSTREAM_EPILOG
from lsp_server.kit.reference.options import add_arguments as add_upstream_arguments
from lsp_server.settings import POLICIES, CacheSettings

#: the settings' own defaults, quoted by the options that override them
_CACHE = CacheSettings()


def exit_codes(*codes: tuple[int, str]) -> str:
    """A command's ``--help`` epilog: ``exit codes: 0 what; 1 what; ...``."""
    return "exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in codes)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "serve",
        help="run the language server (stdio by default)",
        description="Run the language server for one editor, on stdio or TCP.",
        epilog=exit_codes(
            (0, "the editor sent shutdown, then exit (or closed the stream)"),
            (1, "exit without shutdown first (the LSP rule)"),
            (2, "bad usage (--tcp with --stdio, a malformed --tcp)"),
        ),
    )
    p.add_argument(
        "--tcp", metavar="HOST:PORT",
        help="serve one LSP client on TCP instead of stdio (no HOST: 127.0.0.1; PORT 0: a "
        "free port); default: none, stdio",
    )  # fmt: skip
    # LSP clients (vscode-languageclient, others) append --stdio: it is the default.
    p.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    p.add_argument(
        "--config", metavar="FILE",
        help="TOML settings file ([scopecache] table, or [tool.scopecache] in a "
        "pyproject.toml); the editor's settings apply over it (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--log-file", metavar="FILE",
        help="write logs to FILE (default: stderr; never stdout, the protocol's)",
    )  # fmt: skip
    p.add_argument(
        "--log-level", default="INFO", metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR (default: INFO)",
    )  # fmt: skip
    p.add_argument(
        "--log-to-client",
        action="store_true",
        help="send log records to the editor as window/logMessage at their level (also "
        "SCOPECACHE_LOG_TO_CLIENT=1); stderr keeps what cannot go over LSP; --log-file wins",
    )
    p.add_argument(
        "--record-trace", metavar="FILE",
        help="record the session as a scopecache trace in FILE, for replay and simulate "
        "(default: none, nothing recorded)",
    )  # fmt: skip
    p.add_argument(
        "--metrics-port", type=int, metavar="N",
        help="serve Prometheus /metrics and the dashboard at / on 127.0.0.1:N, over the "
        "metricsPort setting (default: none: the setting's, whose 0 is off)",
    )  # fmt: skip
    p.set_defaults(module="lsp_server.server.serve")


def _add_upstream(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "upstream",
        help="run the reference completion service",
        description="The scopecache reference completion service: a deterministic "
        "completer over a corpus, for the demo, replay, tests and offline use.",
        epilog=UPSTREAM_EPILOG,
    )
    add_upstream_arguments(p)
    p.set_defaults(module="lsp_server.kit.reference.cli")


def _add_trace(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "trace",
        help="make editing-session traces",
        description="Make editing-session traces (scopecache-trace v1) for replay and simulate.",
    )
    tsub = p.add_subparsers(dest="trace_command", required=True, metavar="COMMAND")
    s = tsub.add_parser(
        "synth",
        help="synthesize a session that writes the given files",
        description="Synthesize a developer writing the given files: keystrokes, completion "
        "requests, accepted lines, typos and returns to earlier code.",
        epilog=exit_codes(
            (0, "trace written"),
            (2, "bad usage or input (an unreadable file, --nonlinear outside 0 to 1)"),
        ),
    )
    s.add_argument(
        "files", nargs="+", metavar="FILE",
        help="source files the simulated developer writes, from empty to their text now",
    )  # fmt: skip
    s.add_argument(
        "-o", "--output", required=True, metavar="TRACE",
        help="where to write the trace (required)",
    )  # fmt: skip
    s.add_argument(
        "--seed", type=int, default=0, metavar="N",
        help="random seed: the same seed and files make the same session (default: 0)",
    )  # fmt: skip
    s.add_argument(
        "--nonlinear", type=float, default=0.0, metavar="SHARE",
        help="share of non-sequential work, 0 to 1: statements added later, renames, undo "
        "bursts, returns to earlier code (default: 0, top to bottom)",
    )  # fmt: skip
    s.set_defaults(module="lsp_server.kit.synth.session")


def _add_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a trace through a real server process",
        description="Replay a recorded editing session through a real server process.",
        epilog=exit_codes(
            (0, "every request answered"),
            (1, "some requests failed (upstream errors or error answers, see the table's "
                "errors row)"),
            (2, "bad usage or input (unknown --policy, not a scopecache trace, bad --config "
                "file) or the reference service it starts did not come up (its TLS needs the "
                "tls extra: pip install 'scopecache[tls]')"),
        ),
    )  # fmt: skip
    p.add_argument(
        "trace", metavar="TRACE", help="a scopecache trace (trace synth, serve --record-trace)"
    )
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="completion service to use (also read from --config); default: a reference "
        "service it starts over the trace's files",
    )
    p.add_argument(
        "--policy", default=None, metavar="POLICY",
        help=f"cache.policy for this run: {', '.join(POLICIES)} (default: the --config "
        f"file's, else {_CACHE.policy})",
    )  # fmt: skip
    p.add_argument(
        "--capacity", type=int, default=None, metavar="N",
        help="cache.capacity, the L1 entries, for this run (default: the --config file's, "
        f"else {_CACHE.capacity})",
    )  # fmt: skip
    p.add_argument(
        "--config", metavar="FILE",
        help="TOML settings file, read as serve reads it (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--speed", type=float, default=0.0, metavar="FACTOR",
        help="pace of the recorded typing: 0 as fast as possible, 1 real time, 2 twice as "
        "fast (default: 0)",
    )  # fmt: skip
    p.add_argument(
        "--ttft-ms", type=float, default=0.0, metavar="MS",
        help="time to first token of the reference service it starts, in ms (default: 0; "
        "no effect with an endpoint)",
    )  # fmt: skip
    p.add_argument(
        "--token-ms", type=float, default=0.0, metavar="MS",
        help="time per streamed token of the reference service it starts, in ms "
        "(default: 0; no effect with an endpoint)",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    p.set_defaults(module="lsp_server.kit.replay")


class _StrategiesHelp(argparse.Action):
    """``--help-strategies``: list the key designs ``--strategies`` accepts, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        from lsp_server.kit.simulate.strategies import STRATEGY_DESCRIPTIONS

        width = max(map(len, STRATEGY_DESCRIPTIONS))
        lines = [f"  {name:<{width}}  {text}" for name, text in STRATEGY_DESCRIPTIONS.items()]
        sys.stdout.write("key designs for --strategies (comma-separated, or all):\n")
        sys.stdout.write("\n".join(lines) + "\n")
        parser.exit(0)


class _Version(argparse.Action):
    """``--version``: the installed distribution's version, then exit."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("scopecache")
        except PackageNotFoundError:
            found = "unknown (not installed)"
        sys.stdout.write(f"scopecache {found}\n")
        parser.exit(0)


def _add_simulate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="compare policies and key designs offline",
        description="Compare cache policies, key designs and (--timed) client designs "
        "offline, on a trace's requests; opt is Belady's offline optimum.",
        epilog=exit_codes(
            (0, "done"),
            (2, "bad usage or input (an unknown policy, strategy or design, bad "
                "--capacities, an unreadable trace, --plot without the plot extra)"),
        ),
    )  # fmt: skip
    p.add_argument(
        "trace", metavar="TRACE", help="a scopecache trace (trace synth, serve --record-trace)"
    )
    p.add_argument(
        "--policies", default="lru,lfu,arc,lruk,hybrid,opt", metavar="LIST",
        help="cache policies to compare, comma-separated; none and opt (the offline "
        "optimum) count too (default: lru,lfu,arc,lruk,hybrid,opt)",
    )  # fmt: skip
    p.add_argument(
        "--capacities",
        default=None,
        metavar="LIST",
        help="L1 sizes to compare, comma-separated; default: 2%%, 5%%, 10%%, 25%% and 50%% "
        "of the answers an unbounded cache keeps for the trace, so every policy evicts",
    )
    p.add_argument(
        "--strategies", default="scope", metavar="LIST",
        help="key designs, comma-separated or all; see --help-strategies (default: scope)",
    )  # fmt: skip
    p.add_argument(
        "--help-strategies", action=_StrategiesHelp, help="list the key designs and exit"
    )
    p.add_argument(
        "--timed", action="store_true",
        help="model time: streams, typing through them, speculation, per client design",
    )  # fmt: skip
    p.add_argument(
        "--ttft-ms", type=float, default=300.0, metavar="MS",
        help="--timed: time to first token, in ms (default: 300)",
    )  # fmt: skip
    p.add_argument(
        "--token-ms", type=float, default=20.0, metavar="MS",
        help="--timed: time per streamed token, in ms (default: 20)",
    )  # fmt: skip
    p.add_argument(
        "--service", choices=("remote", "local"), default="remote",
        help="--timed: the service's cost model: remote (hosted, OpenAI-compatible: a cancel "
        "stops the prompt) or local (llama.cpp, Ollama: one slot, doomed streams, the idle "
        "rule) (default: remote)",
    )  # fmt: skip
    p.add_argument(
        "--designs",
        default="tabby,continue,cody,copilot,ours",
        metavar="LIST",
        help="--timed: client designs, comma-separated (or all, adding ours-nospec) "
        "(default: tabby,continue,cody,copilot,ours)",
    )
    p.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    p.add_argument(
        "--plot", metavar="PNG",
        help="also draw the comparison into PNG (needs the plot extra: pip install "
        "'scopecache[plot]'); default: none",
    )  # fmt: skip
    p.set_defaults(module="lsp_server.kit.simulate.command")


def _add_prewarm(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "prewarm",
        help="fill the shared L2 by replaying a trace",
        description="Fill the shared L2 before people start work: replay a session through "
        "a server set up like the team's editors, against their completion service.",
        epilog=exit_codes(
            (0, "the L2 was filled"),
            (2, "bad usage or input (no endpoint and no --reference-service, or both; an "
                "unreadable trace or config; cache.l2 = none; the reference service did "
                "not start)"),
        ),
    )  # fmt: skip
    p.add_argument(
        "--from", dest="trace", required=True, metavar="TRACE",
        help="the session to replay: a recorded or synthesized trace (required)",
    )  # fmt: skip
    p.add_argument(
        "--config", metavar="FILE",
        help="TOML settings of the team's editors: endpoint, model, transport, cache.l2 and "
        "its location (default: none: the settings' defaults, a local SQLite L2)",
    )  # fmt: skip
    p.add_argument(
        "--endpoint", metavar="URL",
        help="the completion service the editors use (default: the --config file's "
        "endpoint; one of the two, or --reference-service, is required)",
    )  # fmt: skip
    p.add_argument(
        "--reference-service",
        action="store_true",
        help="fill the L2 from a reference service started over the trace's files instead: "
        "its answers are corpus look-ups, not a model's, and editors reading this L2 are "
        "served them; for trying prewarm out on a scratch L2",
    )
    p.add_argument(
        "--json", action="store_true",
        help="print one JSON object (requests, upstreamRequests, l2) instead of the summary",
    )  # fmt: skip
    p.set_defaults(module="lsp_server.kit.prewarm")


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "demo",
        help="the guided tour: reference service + replay + results",
        description="Start the reference service, replay a synthesized editing session "
        "through two real server processes (cache on, cache off) and compare them.",
        epilog=exit_codes(
            (0, "done"),
            (2, "the reference service did not start (the message says why; its TLS needs "
                "the tls extra: pip install 'scopecache[tls]')"),
        ),
    )  # fmt: skip
    p.add_argument(
        "--seed", type=int, default=7, metavar="N",
        help="seed of the synthesized session: the same seed, the same session (default: 7)",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    p.set_defaults(module="lsp_server.kit.demo")


def _add_diagnose(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "diagnose",
        help="measure each layer of a completion: why is it slow?",
        description="Measure each layer of a completion on its own (network, encoding, "
        "service, client) against the configured service, with a verdict and a hint each.",
        epilog=exit_codes(
            (0, "the verdict is ok or slow"),
            (2, "failing: a layer cannot work (unreachable endpoint, untrusted certificate, "
                "refused key, wrong URL); the report names the setting to fix"),
        ),
    )  # fmt: skip
    p.add_argument(
        "--endpoint", metavar="URL",
        help="completion service to diagnose (default: the --config file's endpoint)",
    )  # fmt: skip
    p.add_argument(
        "--config", metavar="FILE",
        help="TOML settings file, read as serve reads it (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--samples", type=int, default=5, metavar="N",
        help="streamed requests per service measurement, for its p50 and p95 (default: 5)",
    )  # fmt: skip
    p.add_argument(
        "--file", metavar="PATH",
        help="source file the sample prompt is cut from (default: a built-in Python sample)",
    )  # fmt: skip
    p.add_argument(
        "--json", action="store_true", help="print one JSON object instead of the table"
    )
    p.add_argument(
        "--metrics-url", metavar="URL",
        help="a running server's stats JSON (its /stats.json URL, or a saved scopecache/stats "
        "file) for the cache hit ratio and acceptance (default: none, not measured)",
    )  # fmt: skip
    p.add_argument(
        "--log-level", default="WARNING", metavar="LEVEL",
        help="DEBUG, INFO, WARNING or ERROR, to stderr (default: WARNING)",
    )  # fmt: skip
    p.set_defaults(module="lsp_server.diagnose.command")


def _add_slo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "slo",
        help="check service-level objectives (CI gate)",
        description="Check service-level objectives, as a CI gate.",
    )
    ssub = p.add_subparsers(dest="slo_command", required=True, metavar="COMMAND")
    c = ssub.add_parser(
        "check",
        help="evaluate an SLO file against stats or replay JSON",
        description="Evaluate the objectives of an SLO file against scopecache/stats or "
        "replay --json output, and optionally against a previous run.",
        epilog=exit_codes(
            (0, "every objective met"),
            (1, "an objective breached, or regressed against --baseline"),
            (2, "unreadable input (the SLO file, the source or the baseline)"),
        ),
    )
    c.add_argument(
        "--slo", required=True, metavar="FILE", help="TOML file of [[objective]]s (required)"
    )
    c.add_argument(
        "--from", dest="source", required=True, metavar="SRC",
        help="scopecache/stats JSON, replay --json output, or a server's /stats.json URL "
        "(required)",
    )  # fmt: skip
    c.add_argument(
        "--baseline", metavar="JSON",
        help="a previous run's JSON: a value worse by more than --tolerance is a "
        "regression (default: none, no comparison)",
    )  # fmt: skip
    c.add_argument(
        "--tolerance", type=float, default=0.1, metavar="SHARE",
        help="relative regression allowed against --baseline (default: 0.1, 10%%)",
    )  # fmt: skip
    c.set_defaults(module="lsp_server.observe.slo")


def build_parser() -> argparse.ArgumentParser:
    """The full ``scopecache`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="scopecache",
        description="Editor-side AI completion with a syntax-scoped cache.",
        epilog="run scopecache COMMAND --help for a command's options, their defaults and "
        "its exit codes",
    )
    parser.add_argument("--version", action=_Version, help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (
        _add_serve, _add_upstream, _add_trace, _add_replay, _add_simulate, _add_demo,
        _add_diagnose, _add_slo, _add_prewarm,
    ):
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``scopecache`` console script."""
    args = build_parser().parse_args(argv)
    module = importlib.import_module(args.module)
    try:
        code: int = module.run(args)
    except KeyboardInterrupt:
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
