"""A real ``redis-server`` on a free loopback port, for tests and benchmarks.

Persistence is off (``--save "" --appendonly no``), it binds 127.0.0.1 only,
and it is stopped by PID. ``kill()`` then ``start()`` restarts it on the same
port with an empty data set, like a crashed Redis coming back.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from types import TracebackType

from tests.support.process import end_process

REDIS_BINARY = "/usr/bin/redis-server"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def redis_available() -> bool:
    """Whether a redis-server binary can be started here."""
    return os.access(REDIS_BINARY, os.X_OK) or shutil.which("redis-server") is not None


class RedisServer:
    """One redis-server process; use as a context manager or call start/stop."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._dir = tempfile.mkdtemp(prefix="scopecache-redis-")

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:PORT/0``."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start the server and wait until it answers PING."""
        binary = REDIS_BINARY if os.access(REDIS_BINARY, os.X_OK) else "redis-server"
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self._dir, "--loglevel", "warning"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            if self.ping():
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("redis-server did not answer PING")

    def ping(self) -> bool:
        """Whether the server answers PING right now."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL the server (a crash) and wait for it to be gone."""
        proc, self.proc = self.proc, None
        end_process(proc, signal.SIGKILL)

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL if it lingers)."""
        proc, self.proc = self.proc, None
        end_process(proc)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)
