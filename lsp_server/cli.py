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

from lsp_server.kit.reference.options import add_arguments as add_upstream_arguments
from lsp_server.settings import POLICIES


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("serve", help="run the language server (stdio by default)")
    p.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    # LSP clients (vscode-languageclient, others) append --stdio: it is the default.
    p.add_argument("--stdio", action="store_true", help="serve on stdio (the default)")
    p.add_argument("--config", metavar="FILE", help="TOML settings file")
    p.add_argument("--log-file", metavar="FILE", help="write logs here (default: stderr)")
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ERROR")
    p.add_argument(
        "--log-to-client",
        action="store_true",
        help="send log records to the editor as window/logMessage at their level (also "
        "SCOPECACHE_LOG_TO_CLIENT=1); stderr keeps what cannot go over LSP; --log-file wins",
    )
    p.add_argument("--record-trace", metavar="FILE", help="record the session as a trace")
    p.add_argument("--metrics-port", type=int, metavar="N", help="serve /metrics and / on N")
    p.set_defaults(module="lsp_server.server.serve")


def _add_upstream(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("upstream", help="run the reference completion service")
    add_upstream_arguments(p)
    p.set_defaults(module="lsp_server.kit.reference.cli")


def _add_trace(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("trace", help="make editing-session traces")
    tsub = p.add_subparsers(dest="trace_command", required=True)
    s = tsub.add_parser("synth", help="synthesize a session that writes the given files")
    s.add_argument("files", nargs="+", metavar="FILE")
    s.add_argument("-o", "--output", required=True, metavar="TRACE")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--nonlinear", type=float, default=0.0, help="share of non-sequential edits")
    s.set_defaults(module="lsp_server.kit.synth.session")


def _add_replay(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "replay",
        help="replay a trace through a real server process",
        description="Replay a recorded editing session through a real server process.",
        epilog="exit codes: 0 every request answered; 1 some requests failed (upstream "
        "errors or error answers, see the table's errors row); 2 bad usage or input "
        "(unknown --policy, not a scopecache trace, bad --config file)",
    )
    p.add_argument("trace", metavar="TRACE")
    p.add_argument(
        "--endpoint",
        metavar="URL",
        help="completion service to use (also read from --config); default: a reference "
        "service it starts over the trace's files",
    )
    p.add_argument(
        "--policy", default=None, help=f"cache.policy for this run: {', '.join(POLICIES)}"
    )
    p.add_argument("--capacity", type=int, default=None, help="cache.capacity for this run")
    p.add_argument("--config", metavar="FILE", help="TOML settings file")
    p.add_argument("--speed", type=float, default=0.0, help="0: as fast as possible; 1: real time")
    p.add_argument("--ttft-ms", type=float, default=0.0, help="reference service latency")
    p.add_argument("--token-ms", type=float, default=0.0)
    p.add_argument("--json", action="store_true", help="print one JSON object")
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
    p = sub.add_parser("simulate", help="compare policies and key designs offline")
    p.add_argument("trace", metavar="TRACE")
    p.add_argument("--policies", default="lru,lfu,arc,lruk,hybrid,opt")
    p.add_argument(
        "--capacities",
        default=None,
        help="L1 sizes to compare, comma-separated; default: 2%%, 5%%, 10%%, 25%% and 50%% "
        "of the answers an unbounded cache keeps for the trace, so every policy evicts",
    )
    p.add_argument(
        "--strategies", default="scope", help="key designs, comma-separated or all"
    )
    p.add_argument(
        "--help-strategies", action=_StrategiesHelp, help="list the key designs and exit"
    )
    p.add_argument("--timed", action="store_true", help="model time to first token")
    p.add_argument("--ttft-ms", type=float, default=300.0)
    p.add_argument("--token-ms", type=float, default=20.0, help="--timed: ms per streamed token")
    p.add_argument(
        "--designs",
        default="tabby,continue,cody,copilot,ours",
        help="--timed: client designs (or all, adding ours-nospec)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--plot", metavar="PNG")
    p.set_defaults(module="lsp_server.kit.simulate.command")


def _add_prewarm(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("prewarm", help="fill the shared L2 by replaying a trace")
    p.add_argument("--from", dest="trace", required=True, metavar="TRACE")
    p.add_argument("--config", metavar="FILE", help="TOML settings (endpoint, model, cache.l2)")
    p.add_argument("--endpoint", metavar="URL", help="default: a reference service it starts")
    p.add_argument("--json", action="store_true")
    p.set_defaults(module="lsp_server.kit.prewarm")


def _add_demo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("demo", help="the guided tour: reference service + replay + results")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", action="store_true")
    p.set_defaults(module="lsp_server.kit.demo")


def _add_diagnose(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("diagnose", help="measure each layer of a completion: why is it slow?")
    p.add_argument("--endpoint", metavar="URL", help="override the settings' endpoint")
    p.add_argument("--config", metavar="FILE", help="TOML settings file (as for serve)")
    p.add_argument("--samples", type=int, default=5, metavar="N", help="requests per measurement")
    p.add_argument("--file", metavar="PATH", help="prompt sample (default: built-in Python)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--metrics-url", metavar="URL", help="a server's stats JSON (URL or file)")
    p.add_argument("--log-level", default="WARNING", help="DEBUG, INFO, WARNING, ERROR")
    p.set_defaults(module="lsp_server.diagnose.command")


def _add_slo(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("slo", help="check service-level objectives (CI gate)")
    ssub = p.add_subparsers(dest="slo_command", required=True)
    c = ssub.add_parser("check", help="evaluate an SLO file against stats or replay JSON")
    c.add_argument("--slo", required=True, metavar="FILE", help="TOML file of [[objective]]s")
    c.add_argument(
        "--from", dest="source", required=True, metavar="SRC",
        help="scopecache/stats JSON, replay --json output, or a server's /stats.json URL",
    )  # fmt: skip
    c.add_argument("--baseline", metavar="JSON", help="a previous run to compare against")
    c.add_argument("--tolerance", type=float, default=0.1, help="relative regression allowed")
    c.set_defaults(module="lsp_server.observe.slo")


def build_parser() -> argparse.ArgumentParser:
    """The full ``scopecache`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="scopecache",
        description="Editor-side AI completion with a syntax-scoped cache.",
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
