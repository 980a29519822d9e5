"""``scopecache diagnose``, network layer: DNS, TCP, TLS, ALPN, resumption, RTT.

Each step is measured on its own, with the settings the transport uses:
the system resolver and the configured ``transport.nameservers`` (dnspython's
async resolver) are timed separately; TCP connects go to the resolved
address; the TLS handshake uses the transport's own TLS context
(``transport.caFile``, ALPN ``h2``) with the host name for SNI and
verification. A second connection offers the first one's TLS session to see
whether the service resumes it. The RTT estimate is the fastest TCP connect
(one SYN / SYN-ACK round trip).

Sockets are plain blocking sockets run in a worker thread, so the timings
do not include event-loop scheduling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import dns.exception

from lsp_server.diagnose_report import Limit, Measurement, failing, info, judged, skipped
from transport.dns import DnspythonResolver
from transport.errors import ConfigurationError
from transport.network import is_ip_literal, tls_context
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

DNS_LIMIT = Limit(100.0)
TCP_LIMIT = Limit(50.0)
TLS_LIMIT = Limit(100.0)
#: the seed's health threshold for connection set-up
SETUP_LIMIT = Limit(150.0)
RTT_LIMIT = Limit(50.0)
#: at least this many TCP connects, whatever ``--samples`` says
MIN_TCP_SAMPLES = 3
#: how long to wait for the server's first bytes (they carry TLS 1.3 session tickets)
TICKET_WAIT = 0.5
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


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


@dataclass(frozen=True)
class Handshake:
    """One TLS handshake: its duration, ALPN result, version, session."""

    seconds: float
    alpn: str | None
    version: str | None
    session: ssl.SSLSession | None
    resumed: bool


def tls_handshake(
    address: str,
    port: int,
    host: str,
    context: ssl.SSLContext,
    *,
    timeout: float,
    clock: Clock,
    session: ssl.SSLSession | None = None,
) -> Handshake:
    """Connect, then time the TLS handshake alone; waits briefly for session tickets."""
    sock = socket.create_connection((address, port), timeout=timeout)
    try:
        tls = context.wrap_socket(
            sock, server_hostname=host, session=session, do_handshake_on_connect=False
        )
    except BaseException:
        sock.close()
        raise
    with tls:
        started = clock()
        tls.do_handshake()
        elapsed = clock() - started
        alpn = tls.selected_alpn_protocol()
        _collect_ticket(tls, alpn, host)
        return Handshake(elapsed, alpn, tls.version(), tls.session, bool(tls.session_reused))


def _collect_ticket(tls: ssl.SSLSocket, alpn: str | None, host: str) -> None:
    """Read the server's first bytes: TLS 1.3 tickets arrive after the handshake."""
    if tls.session is not None and tls.session.has_ticket:
        return
    nudge = H2_PREFACE if alpn == "h2" else f"HEAD / HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    tls.settimeout(TICKET_WAIT)
    with contextlib.suppress(OSError):
        tls.sendall(nudge)
        tls.recv(4096)


def _connect_hint(exc: OSError, options: EndpointOptions, address: str) -> str:
    where = f"{options.host}:{options.port} ({address})"
    if isinstance(exc, TimeoutError | socket.timeout):
        return (
            f"no answer from {where} within {options.connect_timeout:g} s: "
            "the host is down or a firewall drops the packets"
        )
    if isinstance(exc, ConnectionRefusedError):
        return f"{where} refused the connection: is the service running, and is the port right?"
    return f"cannot connect to {where}: {exc.strerror or exc}"


def _tls_hint(exc: ssl.SSLError, options: EndpointOptions) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or exc.reason or "verification failed"
        return (
            f"the service's certificate is not trusted ({detail}): set transport.caFile "
            "to the CA bundle (PEM) that signed it"
        )
    reason = exc.reason or str(exc)
    return f"TLS handshake failed ({reason}): is {options.endpoint} really an https:// port?"


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
        out.append(failing("tcp connect", _connect_hint(last, options, address)))
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
        handshake = await _tls(options, address, clock, out)
        if handshake is None:
            return NetworkResult(out, None)
        setup_ms += _ms(handshake)
    else:
        out.append(skipped("tls handshake", "plain http://: no TLS"))
        alpn = "h2c (prior knowledge)" if options.http2 else "http/1.1"
        out.append(info("protocol", alpn))
        out.append(skipped("tls session resumption", "plain http://: no TLS"))
    out.append(judged("tcp+tls set-up", setup_ms, SETUP_LIMIT,
                      f"a new connection costs {setup_ms:.0f} ms: the endpoint is far away or "
                      "lacks session resumption; scopecache's pool hides this after the "
                      "first request"))
    out.append(judged("rtt estimate", rtt_ms, RTT_LIMIT,
                      f"every request pays at least {rtt_ms:.0f} ms of round trip: a closer "
                      "region or a local model cuts this"))
    return NetworkResult(out, address)


async def _tls(
    options: EndpointOptions, address: str, clock: Clock, out: list[Measurement]
) -> float | None:
    """Full handshake, ALPN and resumption; seconds of the full handshake or None."""
    try:
        context = tls_context(ca_file=options.ca_file, verify=options.verify_tls,
                              http2=options.http2)
    except ConfigurationError as exc:
        out.append(failing("tls handshake", f"{exc}"))
        return None
    host = options.host
    try:
        first = await asyncio.to_thread(
            tls_handshake, address, options.port, host, context,
            timeout=options.connect_timeout, clock=clock)
    except ssl.SSLError as exc:
        out.append(failing("tls handshake", _tls_hint(exc, options)))
        return None
    except OSError as exc:
        out.append(failing("tls handshake", _connect_hint(exc, options, address)))
        return None
    out.append(judged("tls handshake", _ms(first.seconds), TLS_LIMIT,
                      f"TLS handshake {_ms(first.seconds):.0f} ms: the endpoint is far away or "
                      "lacks session resumption; scopecache's pool hides this after the "
                      "first request"))
    out.append(_alpn(first, options))
    out.append(await _resumption(options, address, context, first, clock))
    return first.seconds


def _alpn(first: Handshake, options: EndpointOptions) -> Measurement:
    alpn = first.alpn or "none"
    value = f"{alpn} ({first.version})" if first.version else alpn
    if not options.http2:
        return Measurement("alpn", value, "", "h2", "ok", None)
    if alpn == "h2":
        return Measurement("alpn", value, "", "h2", "ok", None)
    return Measurement("alpn", value, "", "h2", "slow",
                       "the service does not offer HTTP/2: concurrent requests cannot share "
                       "one connection and a cancelled request costs the connection")


async def _resumption(
    options: EndpointOptions,
    address: str,
    context: ssl.SSLContext,
    first: Handshake,
    clock: Clock,
) -> Measurement:
    name = "tls session resumption"
    if first.session is None:
        return skipped(name, "the first connection gave no TLS session")
    try:
        second = await asyncio.to_thread(
            tls_handshake, address, options.port, options.host, context,
            timeout=options.connect_timeout, clock=clock, session=first.session)
    except (OSError, ssl.SSLError) as exc:
        return failing(name, f"the second connection failed: {exc}")
    if second.resumed:
        return Measurement(name, f"resumed ({_ms(second.seconds):.1f} ms)", "", "resumed", "ok")
    return Measurement(name, "not resumed", "", "resumed", "slow",
                       "the service does not resume TLS sessions: every new connection pays a "
                       "full handshake; scopecache's pool keeps one open to avoid it")
