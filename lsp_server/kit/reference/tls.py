"""Self-signed TLS for the reference service, from a trustme CA.

``--tls-self-signed DIR`` writes ``DIR/ca.pem`` (the certificate clients must
trust), plus the CA key and the server certificate and key beside it. The CA
is reused when ``ca.pem`` and ``ca-key.pem`` already exist, so a client that
trusts it keeps trusting it across restarts. The server certificate names
127.0.0.1, ::1, localhost, a few fixed ``*.test`` hosts (OpenSSL does not let
a wildcard stand for a whole label directly under a top-level domain, so
``*.test`` alone would not cover ``completions.test``) and any names in
``SCOPECACHE_UPSTREAM_TLS_NAMES`` (comma-separated).

trustme (and the cryptography it builds on, some 16 MB) is the ``tls``
extra, not a core dependency: an editor's install never serves TLS from
here. It is imported only when a certificate is made, so the service runs
over cleartext HTTP without it; asking for TLS without it raises
``TlsToolingMissing`` with the command that installs it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import ssl
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

logger = logging.getLogger(__name__)

#: the command that installs the certificate tooling (the ``tls`` extra)
TLS_EXTRA_INSTALL = "pip install 'scopecache[tls]'"

EXTRA_NAMES_ENV = "SCOPECACHE_UPSTREAM_TLS_NAMES"
DEFAULT_NAMES = (
    "127.0.0.1",
    "::1",
    "localhost",
    "*.test",
    "completions.test",
    "upstream.test",
    "reference.test",
    "api.test",
    "tokens.test",
    "*.scopecache.test",
)


class TlsToolingMissing(RuntimeError):
    """TLS was asked for, but the ``tls`` extra (trustme) is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "the reference service's TLS needs the certificate tooling of the tls extra "
            f"(trustme), which is not installed: run {TLS_EXTRA_INSTALL} (in a pipx "
            "install: pipx install --force 'scopecache[tls]')"
        )


def tls_tooling_available() -> bool:
    """Whether ``write_tls_files`` can work: the ``tls`` extra is installed."""
    return importlib.util.find_spec("trustme") is not None


def _trustme() -> ModuleType:
    try:
        import trustme
    except ImportError as exc:
        raise TlsToolingMissing() from exc
    return trustme


@dataclass(frozen=True)
class TlsFiles:
    """Paths of the PEM files written for the service."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def write_tls_files(directory: str | os.PathLike[str]) -> TlsFiles:
    """Create (or reuse) the CA in ``directory`` and issue a server certificate.

    Raises ``TlsToolingMissing`` when the ``tls`` extra is not installed.
    """
    trustme = _trustme()
    root = Path(directory)
    root.mkdir(parents=True, exist_ok=True)
    ca_file, ca_key = root / "ca.pem", root / "ca-key.pem"
    if ca_file.exists() and ca_key.exists():
        ca = trustme.CA.from_pem(ca_file.read_bytes(), ca_key.read_bytes())
    else:
        ca = trustme.CA(organization_name="scopecache reference service")
        ca_key.write_bytes(ca.private_key_pem.bytes())
        os.chmod(ca_key, 0o600)
        ca.cert_pem.write_to_path(str(ca_file))
    extra = [n.strip() for n in os.environ.get(EXTRA_NAMES_ENV, "").split(",") if n.strip()]
    cert = ca.issue_cert(*DEFAULT_NAMES, *extra)
    cert_file, key_file = root / "server.pem", root / "server-key.pem"
    cert.private_key_pem.write_to_path(str(key_file))
    os.chmod(key_file, 0o600)
    # The chain file holds the leaf first, then any intermediates.
    cert_file.write_bytes(b"".join(blob.bytes() for blob in cert.cert_chain_pems))
    return TlsFiles(ca_file, cert_file, key_file)


def server_context(files: TlsFiles, *, http2: bool = True) -> ssl.SSLContext:
    """A server-side context offering h2 and http/1.1 via ALPN."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(str(files.cert_file), str(files.key_file))
    context.set_alpn_protocols(["h2", "http/1.1"] if http2 else ["http/1.1"])
    return context
