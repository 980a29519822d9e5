"""Counters of the reference service, served at ``GET /__stats``.

They let tests prove what reached the service: how many completion requests
(by endpoint), over how many TCP connections, with which HTTP versions, and
how every stream ended. JSON shape (``ServiceStats.snapshot``)::

    {"requests": {"total": N, "/v1/completions": n, ...},
     "connections": N, "openConnections": n, "completionConnections": n,
     "httpVersions": {"2": n, "1.1": n},
     "streamsStarted": n, "streamsCompleted": n, "streamsCancelled": n,
     "streamsAborted": n, "faultsApplied": n,
     "authFailures": n, "tokenRequests": n,
     "connectionsClosedAfterStream": n, "h2PrefacesRejected": n,
     "recent": [{"endpoint", "httpVersion", "connection", "stream", "status"}, ...]}

``requests`` and ``httpVersions`` count completion requests only (not
``/health`` or the ``/__`` control endpoints), faulted and rejected ones
included. ``connections`` counts every TCP connection accepted (control
requests of a test harness too); ``completionConnections`` counts the
distinct connections that carried completion requests, which is what a test
of connection reuse wants. ``streamsCancelled`` counts streams the client abandoned (reset or
disconnect) before the end; ``streamsAborted`` streams the service itself
broke on purpose (fault modes). On HTTP/1.1 a client cancels by closing the
connection, which counts in ``streamsCancelled`` the same way. Each
``recent`` record's ``connection`` is the id of the TCP connection it came on
(ids count accepted connections from 1 and survive a reset; ``lastConnection``
is the newest), so a test can tell whether a request rode a connection that
was open before it was sent.
``connectionsClosedAfterStream`` counts connections the service closed after
a streamed response (``--close-after-stream``), ``h2PrefacesRejected`` HTTP/2
prefaces answered with 400 (``--http1-only``).
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

RECENT = 100


@dataclass
class ServiceStats:
    """Mutable counters; one instance per service process."""

    requests: Counter[str] = field(default_factory=Counter)
    http_versions: Counter[str] = field(default_factory=Counter)
    connections: int = 0
    open_connections: int = 0
    streams_started: int = 0
    streams_completed: int = 0
    streams_cancelled: int = 0
    streams_aborted: int = 0
    faults_applied: int = 0
    auth_failures: int = 0
    token_requests: int = 0
    connections_closed_after_stream: int = 0
    #: id of the newest accepted connection (ids are never reset)
    last_connection: int = 0
    h2_prefaces_rejected: int = 0
    completion_connections: set[int] = field(default_factory=set)
    recent: deque[dict[str, Any]] = field(default_factory=lambda: deque(maxlen=RECENT))

    def count_request(self, endpoint: str, http_version: str, connection: int) -> dict[str, Any]:
        """Count one completion request; returns its ``recent`` record to fill in."""
        self.requests["total"] += 1
        self.requests[endpoint] += 1
        self.http_versions[http_version] += 1
        self.completion_connections.add(connection)
        record: dict[str, Any] = {
            "endpoint": endpoint,
            "httpVersion": http_version,
            "connection": connection,
            "stream": False,
            "status": None,
        }
        self.recent.append(record)
        return record

    def reset(self) -> None:
        """Zero everything except the number of connections open right now."""
        still_open, last = self.open_connections, self.last_connection
        fresh = ServiceStats()
        self.__dict__.update(fresh.__dict__)
        self.open_connections, self.last_connection = still_open, last

    def snapshot(self) -> dict[str, Any]:
        """The JSON object served at ``/__stats``."""
        return {
            "requests": {"total": 0, **dict(self.requests)},
            "connections": self.connections,
            "openConnections": self.open_connections,
            "completionConnections": len(self.completion_connections),
            "httpVersions": dict(self.http_versions),
            "streamsStarted": self.streams_started,
            "streamsCompleted": self.streams_completed,
            "streamsCancelled": self.streams_cancelled,
            "streamsAborted": self.streams_aborted,
            "faultsApplied": self.faults_applied,
            "authFailures": self.auth_failures,
            "tokenRequests": self.token_requests,
            "connectionsClosedAfterStream": self.connections_closed_after_stream,
            "h2PrefacesRejected": self.h2_prefaces_rejected,
            "lastConnection": self.last_connection,
            "recent": [dict(r) for r in self.recent],
        }
