"""``scopecache diagnose``, network layer: DNS, TCP, TLS, ALPN, resumption, RTT.

Each step is measured on its own, with the settings the transport uses:
the system resolver and the configured ``transport.nameservers`` (dnspython's
async resolver) are timed separately; TCP connects go to the resolved
address; the TLS handshake, ALPN and session resumption are measured by
``tls``. The RTT estimate is the fastest TCP connect (one SYN /
SYN-ACK round trip).

Sockets are plain blocking sockets run in a worker thread, so the timings
do not include event-loop scheduling.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import dns.exception

from lsp_server.diagnose.errors import explain_connect
from lsp_server.diagnose.report import Limit, Measurement, failing, info, judged, skipped
from lsp_server.diagnose.tls import diagnose_tls
from transport.dns import DnspythonResolver
from transport.network import is_ip_literal
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

DNS_LIMIT = Limit(100.0)
TCP_LIMIT = Limit(50.0)
#: the seed's health threshold for connection set-up
SETUP_LIMIT = Limit(150.0)
RTT_LIMIT = Limit(50.0)
#: at least this many TCP connects, whatever ``--samples`` says
MIN_TCP_SAMPLES = 3


@dataclass
class NetworkResult:
    """The network layer's measurements and the address the later layers may use."""

    measurements: list[Measurement]
    #: None when the endpoint cannot be reached at all
    address: str | None


def _ms(seconds: float) -> float:
    return seconds * 1000.0


async def system_lookup(host: str, clock: Clock) -> tuple[list[str], float]:
    """Addresses from the system resolver and the time it took (seconds)."""
    loop = asyncio.get_running_loop()
    started = clock()
    infos = await loop.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    elapsed = clock() - started
    ordered = sorted(infos, key=lambda i: i[0] != socket.AF_INET)
    return list(dict.fromkeys(str(i[4][0]) for i in ordered)), elapsed


async def nameserver_lookup(
    host: str, nameservers: tuple[str, ...], clock: Clock, lifetime: float
) -> tuple[list[str], float]:
    """A and AAAA from the configured nameservers (in parallel, as the transport asks)."""
    resolver = DnspythonResolver(nameservers, lifetime=lifetime)
    started = clock()
    (a, _), (aaaa, _) = await asyncio.gather(
        resolver.query(host, "A"), resolver.query(host, "AAAA")
    )
    return a + aaaa, clock() - started


def tcp_connect(address: str, port: int, timeout: float, clock: Clock) -> float:
    """Seconds for one TCP connect (the socket is closed at once)."""
    started = clock()
    sock = socket.create_connection((address, port), timeout=timeout)
    elapsed = clock() - started
    sock.close()
    return elapsed


async def _resolve(
    options: EndpointOptions, clock: Clock, out: list[Measurement]
) -> list[str]:
    """DNS measurements; returns the addresses the transport would connect to."""
    host = options.host
    system_name, servers_name = "dns (system resolver)", "dns (transport.nameservers)"
    if is_ip_literal(host):
        out.append(info(system_name, "no lookup needed", hint="IP literal"))
        out.append(skipped(servers_name, "IP literal: no lookup needed"))
        return [host.strip("[]")]
    system: list[str] = []
    system_failure: str | None = None
    try:
        system, seconds = await system_lookup(host, clock)
        system_item = judged(system_name, _ms(seconds), DNS_LIMIT,
                             "slow DNS: scopecache prefetches and refreshes the answer ahead "
                             "of its TTL, so only the first request after start waits for it")
    except OSError as exc:
        system_failure = f"cannot resolve {host}: {exc.strerror or exc}"
        system_item = failing(system_name, system_failure)
    if not options.nameservers:
        out += [system_item, skipped(servers_name, "transport.nameservers is empty: the system "
                                     "resolver is used")]
        return system
    servers = ", ".join(options.nameservers)
    try:
        found, seconds = await nameserver_lookup(
            host, options.nameservers, clock, options.connect_timeout
        )
    except (dns.exception.DNSException, OSError, ValueError) as exc:
        found, servers_item = [], failing(
            servers_name, f"{servers} did not resolve {host} ({type(exc).__name__}); "
            "scopecache falls back to the system resolver after waiting for them")
    else:
        servers_item = judged(servers_name, _ms(seconds), DNS_LIMIT,
                              f"{servers} answer slowly; scopecache prefetches, so only the "
                              "first request waits")
        if not found:
            servers_item = failing(servers_name, f"{servers} know no address for {host}")
    if not found and system and servers_item.verdict == "failing":
        # Completions still work (the transport falls back), but each lookup waits first.
        servers_item = Measurement(servers_name, None, "", None, "slow", servers_item.hint)
    if found and system_failure is not None:
        # Expected for names only the configured servers know: the transport uses those.
        system_item = skipped(system_name, f"{system_failure}; scopecache asks "
                              "transport.nameservers, which can")
    out += [system_item, servers_item]
    return found or system


async def diagnose_network(
    options: EndpointOptions, *, samples: int, clock: Clock = time.perf_counter
) -> NetworkResult:
    """Measure DNS, TCP, TLS, ALPN, session resumption and RTT for ``options``."""
    out: list[Measurement] = []
    addresses = await _resolve(options, clock, out)
    if not addresses:
        out.append(skipped("tcp connect", "the host name did not resolve"))
        return NetworkResult(out, None)
    connects: list[float] = []
    address = addresses[0]
    last: OSError | None = None
    for candidate in addresses:
        try:
            connects.append(
                await asyncio.to_thread(
                    tcp_connect, candidate, options.port, options.connect_timeout, clock
                )
            )
            address = candidate
            break
        except OSError as exc:
            last = exc
    else:
        assert last is not None
        out.append(failing("tcp connect", explain_connect(last, options, address)))
        return NetworkResult(out, None)
    for _ in range(max(MIN_TCP_SAMPLES, samples) - 1):
        connects.append(await asyncio.to_thread(
            tcp_connect, address, options.port, options.connect_timeout, clock))
    tcp_ms = _ms(statistics.median(connects))
    rtt_ms = _ms(min(connects))
    out.append(judged("tcp connect (p50)", tcp_ms, TCP_LIMIT,
                      "TCP connects are slow: the endpoint is far away or the network is "
                      "congested; scopecache's pool connects once and keeps it open"))
    setup_ms = tcp_ms
    if options.endpoint.startswith("https:"):
        handshake = await diagnose_tls(options, address, clock, out)
        if handshake is None:
            return NetworkResult(out, None)
        setup_ms += _ms(handshake)
    else:
        out.append(skipped("tls handshake", "plain http://: no TLS"))
        out.append(skipped("tls session resumption", "plain http://: no TLS"))
    out.append(judged("tcp+tls set-up", setup_ms, SETUP_LIMIT,
                      f"a new connection costs {setup_ms:.0f} ms: the endpoint is far away or "
                      "lacks session resumption; scopecache's pool hides this after the "
                      "first request"))
    out.append(judged("rtt estimate", rtt_ms, RTT_LIMIT,
                      f"every request pays at least {rtt_ms:.0f} ms of round trip: a closer "
                      "region or a local model cuts this"))
    return NetworkResult(out, address)
