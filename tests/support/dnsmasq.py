"""A real DNS server for tests: dnsmasq on 127.0.0.1, answering test names.

``Dnsmasq`` starts ``dnsmasq -k`` on a free UDP/TCP port with
``--host-record`` entries (name -> 127.0.0.1 with a chosen TTL), no upstream
servers and query logging to a file, so tests can count the queries it
received. The process is stopped by its PID on ``stop()`` / context exit.

    with Dnsmasq({"completions.test": "127.0.0.1"}, ttl=5) as dns:
        options = EndpointOptions(endpoint=..., nameservers=(dns.nameserver,))
        ...
        assert dns.queries("completions.test") == 2   # one A, one AAAA
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import dns.exception
import dns.message
import dns.query

from tests.support.process import end_process

DNSMASQ = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
STARTUP_TIMEOUT = 10.0


def available() -> bool:
    """Whether the dnsmasq binary is installed."""
    return Path(DNSMASQ).exists()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Dnsmasq:
    """A dnsmasq process answering ``records`` on 127.0.0.1:``port``."""

    def __init__(self, records: Mapping[str, str], *, ttl: int = 5) -> None:
        self.records = dict(records)
        self.ttl = ttl
        self.port = 0
        self.workdir = Path(tempfile.mkdtemp(prefix="scopecache-dns-"))
        self.log_file = self.workdir / "queries.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def nameserver(self) -> str:
        """The ``transport.nameservers`` entry, ``"127.0.0.1:PORT"``."""
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        """The dnsmasq command line."""
        cmd = [
            DNSMASQ,
            "-k",
            "--conf-file=/dev/null",
            f"--port={self.port}",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--no-resolv",
            "--no-hosts",
            "--no-negcache",
            "--user=root",
            f"--pid-file={self.workdir / 'dnsmasq.pid'}",
            f"--local-ttl={self.ttl}",
            "--log-queries",
            f"--log-facility={self.log_file}",
        ]
        for name, address in self.records.items():
            domain = name.rsplit(".", 1)[-1]
            cmd += [f"--host-record={name},{address},{self.ttl}", f"--local=/{domain}/"]
        return cmd

    def start(self) -> Dnsmasq:
        """Start dnsmasq and wait until it answers."""
        for _ in range(5):
            self.port = _free_port()
            self.process = subprocess.Popen(
                self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
            )
            try:
                self._wait_ready()
                return self
            except RuntimeError:
                self._kill()  # most likely the port was taken meanwhile: try another
        raise RuntimeError(f"dnsmasq did not start: {self.command()}")

    def _wait_ready(self) -> None:
        assert self.process is not None
        name = next(iter(self.records), "ready.test")
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("dnsmasq exited")
            try:
                query = dns.message.make_query(name, "A")
                dns.query.udp(query, "127.0.0.1", port=self.port, timeout=0.2)
                return
            except (dns.exception.Timeout, OSError):
                time.sleep(0.05)
        raise RuntimeError("dnsmasq did not answer")

    def queries(self, name: str | None = None) -> int:
        """Queries logged so far (for ``name``, if given)."""
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError:
            return 0
        pattern = r"query\[\w+\] " + (re.escape(name) if name else r"\S+") + r" from"
        return len(re.findall(pattern, text))

    def _kill(self) -> None:
        proc, self.process = self.process, None
        end_process(proc)
        if proc is not None and proc.stderr is not None:
            proc.stderr.close()

    def stop(self) -> None:
        """Stop dnsmasq by PID and remove its files."""
        self._kill()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> Dnsmasq:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
