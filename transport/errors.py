"""The transport's exception tree.

Callers see these, never httpx's, httpcore's or dnspython's exceptions::

    TransportError
     +-- ConfigurationError        bad endpoint URL, unknown provider, unreadable CA file
     +-- NetworkError
     |    +-- DNSError             the host did not resolve
     |    +-- ConnectError         refused, unreachable, reset before any byte arrived
     |    +-- TLSError             handshake or certificate verification failed
     |    +-- StreamResetError     the connection or stream broke mid-response
     +-- UpstreamTimeout           connect, read, write or pool timeout
     +-- UpstreamStatusError       a non-2xx answer (``status``, ``retry_after``)
     |    +-- RateLimited          429 or 503 with the service asking us to wait
     |    +-- AuthRejected         401 or 403
     +-- UpstreamProtocolError     malformed JSON or SSE, oversized or invalid output
     |    +-- ProtocolRejected     the server does not speak the HTTP version the settings require
     +-- CircuitOpenError          the breaker is open: the service is not asked
     +-- BackendClosed             the backend was closed while the request waited
     +-- AuthError                 no token could be obtained

Messages never contain an API key or token.
"""

from __future__ import annotations


class TransportError(Exception):
    """Base of every error the transport raises."""

    #: short machine-readable kind used in stats and logs
    kind = "transport"


class ConfigurationError(TransportError):
    """The endpoint configuration cannot work (bad URL, provider, CA file)."""

    kind = "config"


class NetworkError(TransportError):
    """The network failed underneath an HTTP exchange."""

    kind = "network"


class DNSError(NetworkError):
    """The endpoint's host name did not resolve."""

    kind = "dns"


class ConnectError(NetworkError):
    """No connection could be made, or it broke before any byte arrived."""

    kind = "connect"


class TLSError(NetworkError):
    """TLS handshake or certificate verification failed."""

    kind = "tls"


class StreamResetError(NetworkError):
    """The connection or the HTTP/2 stream broke mid-response."""

    kind = "reset"


class UpstreamTimeout(TransportError):
    """A connect, read, write or pool timeout expired."""

    kind = "timeout"


class UpstreamStatusError(TransportError):
    """The service answered with a non-success status."""

    kind = "status"

    def __init__(self, status: int, message: str = "", *, retry_after: float | None = None):
        super().__init__(message or f"upstream answered HTTP {status}")
        self.status = status
        self.retry_after = retry_after


class RateLimited(UpstreamStatusError):
    """The service is overloaded (429/503) and may have said when to retry."""

    kind = "rate_limited"


class AuthRejected(UpstreamStatusError):
    """The service refused our credentials (401/403)."""

    kind = "auth_rejected"


class UpstreamProtocolError(TransportError):
    """The service's answer could not be understood or broke a limit."""

    kind = "protocol"


class ProtocolRejected(UpstreamProtocolError):
    """The server does not speak the HTTP version the settings require.

    The message names the setting to change (``transport.http2``).
    """

    kind = "protocol_rejected"


class CircuitOpenError(TransportError):
    """The circuit breaker is open; the request was not sent."""

    kind = "circuit_open"


class BackendClosed(TransportError):
    """The backend was closed (shutdown, other endpoint settings); the request was not sent."""

    kind = "closed"


class AuthError(TransportError):
    """No credentials could be obtained (token endpoint down, command failed)."""

    kind = "auth"
