"""``scopecache diagnose``, TLS part of the network layer: handshake, ALPN, resumption.

The handshake is timed alone (after the TCP connect) with the transport's
own TLS context (``transport.caFile``, ALPN ``h2`` when ``transport.http2``),
SNI and verification on the endpoint's host name. TLS 1.3 session tickets
arrive after the handshake, so the probe sends the protocol's first bytes
(the HTTP/2 preface, or a HEAD request) and reads the answer before it
offers the session to a second connection to see whether it is resumed.
Plain blocking sockets, run in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass

from lsp_server.diagnose.errors import explain_connect
from lsp_server.diagnose.report import Limit, Measurement, failing, judged, skipped
from transport.errors import ConfigurationError
from transport.network import tls_context
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)

Clock = Callable[[], float]

TLS_LIMIT = Limit(100.0)
#: how long to wait for the server's first bytes (they carry TLS 1.3 session tickets)
TICKET_WAIT = 0.5
H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _ms(seconds: float) -> float:
    return seconds * 1000.0


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


def _tls_hint(exc: ssl.SSLError, options: EndpointOptions) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        detail = exc.verify_message or exc.reason or "verification failed"
        return (
            f"the service's certificate is not trusted ({detail}): set transport.caFile "
            "to the CA bundle (PEM) that signed it"
        )
    reason = exc.reason or str(exc)
    return f"TLS handshake failed ({reason}): is {options.endpoint} really an https:// port?"


async def diagnose_tls(
    options: EndpointOptions, address: str, clock: Clock, out: list[Measurement]
) -> float | None:
    """Full handshake, ALPN and resumption into ``out``; the full handshake's seconds or None."""
    try:
        http1, http2 = options.protocols
        context = tls_context(ca_file=options.ca_file, verify=options.verify_tls,
                              http1=http1, http2=http2)
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
        out.append(failing("tls handshake", explain_connect(exc, options, address)))
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
    if options.http2 is False:
        return Measurement("alpn", value, "", "http/1.1", "ok", None)
    if alpn == "h2":
        return Measurement("alpn", value, "", "h2", "ok", None)
    if options.http2 is True:
        return Measurement("alpn", value, "", "h2", "failing",
                           f"this server speaks {alpn} only, not HTTP/2: set transport.http2 "
                           "to auto")
    # auto: HTTP/1.1 is a first-class path (a pool of kept-alive connections)
    return Measurement("alpn", value, "", None, "ok", None)


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
