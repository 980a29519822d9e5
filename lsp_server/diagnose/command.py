"""``scopecache diagnose``: why are my completions slow? Each layer measured on its own.

Settings are read as ``scopecache serve`` reads them (``--config`` TOML,
then ``--endpoint`` overrides the endpoint). Then, against that service:

1. network (``network``): DNS (system resolver and
   ``transport.nameservers``), TCP connect, TLS handshake, ALPN, TLS session
   resumption, RTT estimate;
2. encoding (``encoding``): the sample prompt's characters against
   the tokens the service counts, the inflation ratio, window use;
3. service (``service``): TTFT, total time and decode rate of
   streamed completions (p50/p95 over ``--samples``), and the same prompt
   through ``/chat/completions`` where the service offers it; and the
   server prompt cache (``prompt_cache``): how many prompt tokens a
   request one keystroke after another re-evaluates;
4. client (``client``): scopecache's pooled transport against a
   cold client, and a running server's cache hit ratio and the source whose
   accepted suggestions were kept least (``--metrics-url``; ``acceptance``).

Every measurement gets a verdict against its health threshold and a hint
when it is not ok (``report``). A layer that cannot work (the
endpoint is unreachable, the certificate is untrusted, the key is refused,
the URL is wrong) gives a ``failing`` report with the reason and the
setting to fix; later layers are then ``skipped``. Exit code: 0 when the
verdict is ok or slow, 2 when it is failing. Never a traceback: an
unexpected error becomes a failing report too (details at ``--log-level
DEBUG`` on stderr).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence

from rich.console import Console

from lsp_server.diagnose.acceptance import acceptance_measurement
from lsp_server.diagnose.client import cache_measurement, diagnose_client
from lsp_server.diagnose.encoding import encoding_measurements
from lsp_server.diagnose.errors import explain
from lsp_server.diagnose.network import diagnose_network
from lsp_server.diagnose.prompt_cache import diagnose_prompt_cache
from lsp_server.diagnose.report import LAYERS, Report, failing, info, render_table
from lsp_server.diagnose.sample import PromptSample, SampleError, builtin_sample, file_sample
from lsp_server.diagnose.service import (
    PinnedAddresses,
    ServiceProbe,
    diagnose_service,
    probe_client,
    prompt_cut_measurement,
    protocol_row,
    service_measurements,
)
from lsp_server.server.assembly import endpoint_options
from lsp_server.server.serve import configure_logging, load_settings
from lsp_server.settings import Settings
from transport import errors
from transport.auth.kinds import auth_for
from transport.factory import build_backend
from transport.network import PinnedResolverBackend
from transport.service_detect import detect_service

logger = logging.getLogger(__name__)

DEFAULT_SAMPLES = 5
#: a table narrower than this folds every hint; used when stdout is not a terminal
REPORT_WIDTH = 140

Clock = Callable[[], float]


async def diagnose(
    settings: Settings,
    *,
    sample: PromptSample,
    samples: int = DEFAULT_SAMPLES,
    metrics_source: str | None = None,
    problems: Sequence[str] = (),
    clock: Clock = time.perf_counter,
) -> Report:
    """Measure every layer against ``settings.endpoint``; never raises a transport error."""
    report = Report(settings.endpoint, settings.provider, problems=list(problems))
    if settings.endpoint is None:
        report.add("network", failing("endpoint", "no endpoint configured: pass --endpoint URL "
                                      "or set endpoint in the settings file (--config)"))
        report.skip_rest(LAYERS, "not measured: no endpoint")
        return report
    try:
        options = endpoint_options(settings)
        options.validate()
    except errors.ConfigurationError as exc:
        report.add("network", failing("endpoint", str(exc)))
        report.skip_rest(LAYERS, "not measured: the settings cannot work")
        return report
    network = await diagnose_network(options, samples=samples, clock=clock)
    report.add("network", *network.measurements)
    if network.address is None:
        report.skip_rest(("encoding", "service", "client"),
                         "not measured: the service cannot be reached (see network)")
        return report
    try:
        auth = auth_for(options)
        await auth.start()
        headers = await auth.header()
    except errors.TransportError as exc:
        report.add("service", failing("credentials", explain(exc, options)))
        report.skip_rest(("encoding", "client"), "not measured: no credentials (see service)")
        return report
    client = probe_client(options, PinnedResolverBackend(PinnedAddresses([network.address])))
    try:
        profile = None
        if options.provider in ("auto", "llamacpp"):
            profile = await detect_service(client, options, headers)
            report.add("service", *service_measurements(options, profile))
        probe = ServiceProbe(options, client, headers, clock=clock, profile=profile)
        url, _ = probe.completion_body(sample, stream=False)
        try:
            tokens = await probe.prompt_tokens(sample)
        except errors.ProtocolRejected as exc:
            report.add("network", failing("protocol", explain(exc, options)))
            report.add("service", failing("completion endpoint", explain(exc, options)))
            report.skip_rest(("encoding", "client"),
                             "not measured: the server rejected the protocol (see network)")
            return report
        except errors.TransportError as exc:
            report.add("network", protocol_row(client, options))
            report.add("service", failing("completion endpoint", explain(exc, options)))
            report.skip_rest(("encoding", "client"),
                             "not measured: the completion request failed (see service)")
            return report
        report.add("network", protocol_row(client, options))
        report.add("encoding", *encoding_measurements(options, sample, tokens))
        if tokens is not None:
            report.add("service", prompt_cut_measurement(probe, sample, tokens))
        report.add("service", info("completion endpoint", "answers", hint=f"POST {url}"))
        try:
            measurements, _service_ttft = await diagnose_service(probe, sample, samples)
            report.add("service", *measurements)
        except errors.TransportError as exc:
            report.add("service", failing("streamed completion", explain(exc, options)))
        report.add("service", await diagnose_prompt_cache(probe, sample))
        backend = build_backend(options)
        try:
            report.add("client", *await diagnose_client(
                options, backend, sample, headers,
                samples=samples, clock=clock))
        finally:
            await backend.aclose()
    finally:
        await client.aclose()
        await auth.aclose()
    report.add("client", await asyncio.to_thread(cache_measurement, metrics_source))
    report.add("client", await asyncio.to_thread(acceptance_measurement, metrics_source))
    return report


def _sample(path: str | None) -> PromptSample:
    return file_sample(path) if path else builtin_sample()


def _failed_report(endpoint: str | None, name: str, hint: str) -> Report:
    report = Report(endpoint)
    report.add("network", failing(name, hint))
    report.skip_rest(LAYERS, f"not measured: {name} failed")
    return report


def build_report(args: argparse.Namespace) -> Report:
    """Run the diagnosis for parsed command-line arguments; never raises."""
    settings, problems = load_settings(args.config)
    if args.endpoint:
        settings.endpoint = args.endpoint
    try:
        sample = _sample(args.file)
    except SampleError as exc:
        return _failed_report(settings.endpoint, "sample", str(exc))
    try:
        return asyncio.run(diagnose(
            settings,
            sample=sample,
            samples=max(1, int(args.samples)),
            metrics_source=args.metrics_url,
            problems=problems,
        ))
    except Exception as exc:  # the report is the interface: no traceback for the user
        logger.debug("diagnose failed", exc_info=True)
        return _failed_report(settings.endpoint, "diagnose",
                              f"unexpected {type(exc).__name__}: {exc} "
                              "(run with --log-level DEBUG for details)")


def run(args: argparse.Namespace) -> int:
    """Entry point of ``scopecache diagnose``: 0 when ok or slow, 2 when failing."""
    configure_logging(getattr(args, "log_level", "WARNING"), None)
    report = build_report(args)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json(), indent=2) + "\n")
    else:
        console = Console()
        if not console.is_terminal:
            console = Console(width=REPORT_WIDTH)
        render_table(report, console)
    return 2 if report.verdict == "failing" else 0
