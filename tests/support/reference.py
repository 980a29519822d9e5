"""Run the real reference completion service in a subprocess for tests and benchmarks.

``ReferenceService`` starts ``python -m lsp_server.kit.reference`` on 127.0.0.1
with port 0 and a port file, optionally with TLS (a fresh trustme CA in a
temporary directory), waits for ``/health`` and always kills the process on
``stop()`` / context exit. It passes ``--control`` unless told not to
(``control=False``), so the control helpers can use the service's ``/__``
endpoints; they talk to them over one persistent HTTP/1.1 connection, so
they add at most one TCP connection to the service's ``connections`` counter
(and never to ``completionConnections``).

    with ReferenceService(token_ms=5) as svc:
        client = httpx.Client(http2=True, verify=svc.ca_file)
        client.post(svc.url + "/completions", json={...})
        assert svc.stats()["requests"]["total"] == 1
"""

from __future__ import annotations

import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from lsp_server.kit.upstream_process import read_port_file, reference_command
from tests.support.process import end_process

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CORPUS = REPO_ROOT / "tests" / "data" / "corpus"
STARTUP_TIMEOUT = 30.0


class ReferenceServiceError(RuntimeError):
    """The service did not start or a control request failed."""


class ReferenceService:
    """A ``scopecache upstream`` process on 127.0.0.1 with control helpers."""

    def __init__(
        self,
        *,
        tls: bool = True,
        corpus: Sequence[str | os.PathLike[str]] | None = None,
        ttft_ms: float = 0.0,
        token_ms: float = 0.0,
        env: Mapping[str, str] | None = None,
        require_key_env: str | None = None,
        workdir: str | os.PathLike[str] | None = None,
        log_level: str = "WARNING",
        extra_args: Sequence[str] = (),
        control: bool = True,
    ) -> None:
        self.tls = tls
        self.control = control
        self.corpus = [str(p) for p in (corpus if corpus is not None else [DEFAULT_CORPUS])]
        self.ttft_ms = ttft_ms
        self.token_ms = token_ms
        self.env = dict(env or {})
        self.require_key_env = require_key_env
        self.log_level = log_level
        self.extra_args = list(extra_args)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="scopecache-ref-"))
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        self._control: httpx.Client | None = None

    # -- addresses -----------------------------------------------------------

    @property
    def scheme(self) -> str:
        """``https`` with TLS, else ``http`` (h2c or HTTP/1.1)."""
        return "https" if self.tls else "http"

    @property
    def base(self) -> str:
        """Origin, e.g. ``https://127.0.0.1:PORT``."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """OpenAI-style endpoint setting, e.g. ``https://127.0.0.1:PORT/v1``."""
        return self.base + "/v1"

    @property
    def ca_file(self) -> Path | None:
        """The CA certificate to trust (None without TLS)."""
        return self.workdir / "tls" / "ca.pem" if self.tls else None

    @property
    def log_file(self) -> Path:
        """Where the service's stderr goes."""
        return self.workdir / "upstream.log"

    def log(self) -> str:
        """The service's stderr so far."""
        try:
            return self.log_file.read_text(errors="replace")
        except OSError:
            return ""

    def ssl_context(self) -> ssl.SSLContext:
        """A client context that trusts the service's CA (system CAs without TLS)."""
        if self.ca_file is None:
            return ssl.create_default_context()
        return ssl.create_default_context(cafile=str(self.ca_file))

    def verify(self) -> ssl.SSLContext | bool:
        """The ``verify=`` argument for an httpx client."""
        return self.ssl_context() if self.ca_file else True

    def client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client that trusts the service (HTTP/2 by default)."""
        kwargs.setdefault("http2", True)
        kwargs.setdefault("verify", self.verify())
        kwargs.setdefault("timeout", 10.0)
        if not self.tls and kwargs["http2"]:
            kwargs.setdefault("http1", False)  # h2c needs prior knowledge
        return httpx.Client(**kwargs)

    def async_client(self, **kwargs: Any) -> httpx.AsyncClient:
        """An async httpx client that trusts the service (HTTP/2 by default)."""
        kwargs.setdefault("http2", True)
        kwargs.setdefault("verify", self.verify())
        kwargs.setdefault("timeout", 10.0)
        if not self.tls and kwargs["http2"]:
            kwargs.setdefault("http1", False)
        return httpx.AsyncClient(**kwargs)

    # -- lifecycle -----------------------------------------------------------

    def command(self) -> list[str]:
        """The command line used to start the service."""
        extra = ["--log-level", self.log_level]
        if self.require_key_env:
            extra += ["--require-key-env", self.require_key_env]
        return reference_command(
            self.workdir / "port",
            corpus=self.corpus,
            ttft_ms=self.ttft_ms,
            token_ms=self.token_ms,
            tls_dir=self.workdir / "tls" if self.tls else None,
            control=self.control,
            extra_args=[*extra, *self.extra_args],
        )

    def start(self) -> ReferenceService:
        """Start the process and wait until ``/health`` answers."""
        port_file = self.workdir / "port"
        port_file.unlink(missing_ok=True)
        env = {**os.environ, **self.env}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        with open(self.log_file, "ab") as log:
            self.process = subprocess.Popen(
                self.command(), stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=REPO_ROOT
            )
        try:
            self._wait_ready(port_file)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self, port_file: Path) -> None:
        assert self.process is not None
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise ReferenceServiceError(f"service exited early:\n{self.log()}")
            port = read_port_file(port_file)
            if port is not None:
                self.port = port
                break
            time.sleep(0.02)
        else:
            raise ReferenceServiceError(f"service did not write its port:\n{self.log()}")
        self._control = httpx.Client(base_url=self.base, verify=self.verify(), timeout=10.0)
        while time.monotonic() < deadline:
            try:
                if self._control.get("/health").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.02)
        raise ReferenceServiceError(f"service never became healthy:\n{self.log()}")

    def stop(self) -> None:
        """Stop the process (SIGTERM, then SIGKILL) and remove temporary files."""
        if self._control is not None:
            self._control.close()
            self._control = None
        proc, self.process = self.process, None
        end_process(proc)
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ReferenceService:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "running" if self.process and self.process.poll() is None else "stopped"
        return f"<ReferenceService {self.base} {state}>"

    # -- control -------------------------------------------------------------

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        if self._control is None:
            raise ReferenceServiceError("service is not running")
        response = self._control.request(method, path, json=body)
        if response.status_code >= 400:
            raise ReferenceServiceError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()

    def stats(self) -> dict[str, Any]:
        """``GET /__stats``."""
        result: dict[str, Any] = self._call("GET", "/__stats")
        return result

    def completion_requests(self, endpoint: str = "/v1/completions") -> int:
        """Requests that reached ``endpoint`` since the last reset (refused ones included)."""
        return int(self.stats()["requests"].get(endpoint, 0))

    def reset_stats(self) -> None:
        """``POST /__stats/reset``."""
        self._call("POST", "/__stats/reset")

    def set_fault(self, mode: str, count: int = 1, **params: Any) -> None:
        """Arm fault ``mode`` for the next ``count`` requests (-1: until cleared)."""
        self._call("POST", "/__faults", {"mode": mode, "count": count, **params})

    def clear_faults(self) -> None:
        """Disarm every fault."""
        self._call("DELETE", "/__faults")

    def enable_tokens(self, client_id: str, client_secret: str, lifetime: float = 60.0) -> None:
        """Token mode: completions need a token from ``{base}/oauth/token``."""
        body = {"clientId": client_id, "clientSecret": client_secret, "lifetime": lifetime}
        self._call("POST", "/__auth", body)

    def disable_tokens(self) -> None:
        """Leave token mode."""
        self._call("DELETE", "/__auth")

    def revoke_tokens(self) -> int:
        """Invalidate every issued token; returns how many were valid."""
        return int(self._call("POST", "/__auth/revoke")["revoked"])

    def set_latency(self, ttft_ms: float, token_ms: float) -> None:
        """Change the emulated latency at run time."""
        self._call("POST", "/__latency", {"ttftMs": ttft_ms, "tokenMs": token_ms})

    @property
    def token_url(self) -> str:
        """The OAuth 2.0 token endpoint."""
        return self.base + "/oauth/token"

    def reset(self) -> None:
        """Back to a fresh state: no faults, no token mode, start latency, zero stats."""
        self.clear_faults()
        self.disable_tokens()
        self.set_latency(self.ttft_ms, self.token_ms)
        self.reset_stats()
