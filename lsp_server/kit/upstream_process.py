"""Start the reference completion service as a child process.

``replay``, ``demo`` and ``prewarm --reference-service`` use it to get a
real service on loopback (TLS, HTTP/2) over a corpus, exactly as a user
would run ``scopecache upstream``. They only read its counters (``GET
/__stats``), so they start it without ``--control``: its switches stay off.
TLS needs the ``tls`` extra; without it ``start`` fails at once with the
command that installs it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import ssl
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx

from lsp_server.kit.reference.tls import TlsToolingMissing, tls_tooling_available

#: how long the service may take to start listening
START_TIMEOUT = 20.0


class UpstreamStartError(RuntimeError):
    """The reference service did not come up."""


def reference_command(
    port_file: Path,
    *,
    corpus: Sequence[str] = (),
    ttft_ms: float = 0.0,
    token_ms: float = 0.0,
    tls_dir: Path | None = None,
    control: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command line of ``python -m lsp_server.kit.reference`` on 127.0.0.1, any free port.

    The service writes its port to ``port_file`` once it listens
    (``read_port_file``); with ``tls_dir`` it serves TLS and writes ``ca.pem``
    there; with ``control`` it answers its control endpoints (``--control``).
    """
    args = [
        sys.executable,
        "-m",
        "lsp_server.kit.reference",
        "--host",
        "127.0.0.1",
        "--port",
        "0",
        "--port-file",
        str(port_file),
        "--ttft-ms",
        str(ttft_ms),
        "--token-ms",
        str(token_ms),
        *extra_args,
    ]
    if tls_dir is not None:
        args += ["--tls-self-signed", str(tls_dir)]
    if control:
        args.append("--control")
    if corpus:
        args += ["--corpus", *corpus]
    return args


def read_port_file(port_file: Path) -> int | None:
    """The port a starting service wrote, or None while it has not written it yet."""
    try:
        text = port_file.read_text().strip()
    except FileNotFoundError:
        return None
    return int(text) if text else None


class ReferenceProcess:
    """``scopecache upstream`` on 127.0.0.1 with a self-signed CA."""

    def __init__(
        self,
        corpus: Sequence[str | Path],
        *,
        ttft_ms: float = 0.0,
        token_ms: float = 0.0,
        tls: bool = True,
        extra_args: Sequence[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.corpus = [str(p) for p in corpus]
        self.ttft_ms = ttft_ms
        self.token_ms = token_ms
        self.tls = tls
        self.extra_args = list(extra_args)
        self.env = env
        self._dir = tempfile.TemporaryDirectory(prefix="scopecache-upstream-")
        self.workdir = Path(self._dir.name)
        self.port = 0
        self._process: asyncio.subprocess.Process | None = None

    @property
    def origin(self) -> str:
        """``https://127.0.0.1:PORT`` (or http)."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"{self.origin}/v1"

    @property
    def ca_file(self) -> str | None:
        """The CA certificate that signed the service's certificate."""
        return str(self.workdir / "ca.pem") if self.tls else None

    async def start(self) -> None:
        """Start the process and wait until ``/health`` answers."""
        if self.tls and not tls_tooling_available():
            raise UpstreamStartError(str(TlsToolingMissing()))
        port_file = self.workdir / "port"
        args = reference_command(
            port_file,
            corpus=self.corpus,
            ttft_ms=self.ttft_ms,
            token_ms=self.token_ms,
            tls_dir=self.workdir if self.tls else None,
            extra_args=self.extra_args,
        )
        log = open(self.workdir / "upstream.log", "wb")  # noqa: SIM115 - owned by the child
        self._process = await asyncio.create_subprocess_exec(
            *args,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=self.env if self.env is not None else dict(os.environ),
        )
        log.close()
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.returncode is not None:
                raise UpstreamStartError(self._failure("exited"))
            port = read_port_file(port_file)
            if port is not None:
                self.port = port
                with contextlib.suppress(httpx.HTTPError):
                    await self.get("/health")
                    return
            await asyncio.sleep(0.05)
        await self.stop()
        raise UpstreamStartError(self._failure("did not start in time"))

    def _failure(self, what: str) -> str:
        log = (self.workdir / "upstream.log").read_text(errors="replace")[-2000:]
        return f"reference service {what}:\n{log}"

    async def get(self, path: str) -> Any:
        """GET a JSON document from the service."""
        verify: ssl.SSLContext | bool = True
        if self.ca_file:
            verify = ssl.create_default_context(cafile=self.ca_file)
        async with httpx.AsyncClient(verify=verify, timeout=5.0) as client:
            response = await client.get(self.origin + path)
            response.raise_for_status()
            return response.json()

    async def stats(self) -> dict[str, Any]:
        """The service's own counters (``GET /__stats``)."""
        data: dict[str, Any] = await self.get("/__stats")
        return data

    async def stop(self) -> None:
        """Terminate the process (kill if it lingers) and remove its files."""
        if self._process is not None and self._process.returncode is None:
            self._process.terminate()
            try:
                await asyncio.wait_for(self._process.wait(), 5.0)
            except TimeoutError:
                self._process.kill()
                await self._process.wait()
        self._dir.cleanup()

    async def __aenter__(self) -> ReferenceProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
