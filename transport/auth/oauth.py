"""OAuth 2.0 client credentials (RFC 6749, section 4.4) as a ``TokenSource``.

``auth.kind = "oauth2-client-credentials"``: a form POST to ``auth.tokenUrl``
with ``grant_type=client_credentials`` (and ``scope`` when ``auth.scope`` is
set); the client authenticates with HTTP Basic (``client_secret_basic``, the
method every server must support, id and secret form-encoded first as the
RFC says). The secret is read from the environment variable named by
``auth.clientSecretEnv`` at each fetch, so a rotated secret is picked up.

The answer must be JSON with a non-empty ``access_token`` and, if present,
``token_type`` ``Bearer`` (any case) and a positive ``expires_in``
(seconds; a numeric string is accepted). Anything else is an ``AuthError``
that names what was wrong, never the body (it could hold a token). Redirects
are not followed: the credentials go to the configured URL only.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
from collections.abc import Mapping
from urllib.parse import quote, urlsplit

import httpx

from transport.auth.source import IssuedToken, TokenSource, lifetime_seconds
from transport.errors import AuthError, ConfigurationError
from transport.network import tls_context

logger = logging.getLogger(__name__)

#: seconds for one token request, connect to last byte
DEFAULT_TIMEOUT = 10.0
#: a token response larger than this is garbage
MAX_RESPONSE_BYTES = 64 * 1024
_ERROR_CODE = re.compile(r"[a-z_]{1,40}")
_LOOPBACK = ("127.0.0.1", "::1", "localhost")


class ClientCredentialsSource(TokenSource):
    """Fetches access tokens from an OAuth 2.0 token endpoint."""

    def __init__(
        self,
        token_url: str,
        client_id: str,
        secret_env: str,
        *,
        scope: str | None = None,
        environ: Mapping[str, str] | None = None,
        ca_file: str | None = None,
        verify_tls: bool = True,
        transport: httpx.AsyncBaseTransport | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        parts = urlsplit(token_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"auth.tokenUrl must be an http(s) URL (got {token_url!r})")
        if parts.scheme == "http" and parts.hostname not in _LOOPBACK:
            logger.warning("auth.tokenUrl is plain http: the client secret travels unencrypted")
        self.token_url = token_url
        self.client_id = client_id
        self.secret_env = secret_env
        self.scope = scope
        self.description = f"token endpoint {parts.scheme}://{parts.netloc}{parts.path}"
        self._environ = environ if environ is not None else os.environ
        verify = tls_context(ca_file=ca_file, verify=verify_tls, http2=False)
        self._client = httpx.AsyncClient(
            transport=transport,
            verify=verify,
            timeout=timeout,
            trust_env=False,
            follow_redirects=False,
            headers={"Accept": "application/json"},
        )

    def _secret(self) -> str:
        secret = self._environ.get(self.secret_env, "").strip()
        if not secret:
            raise AuthError(f"the client secret variable {self.secret_env} is not set")
        return secret

    def secrets(self) -> list[str]:
        """The client secret (when set)."""
        secret = self._environ.get(self.secret_env, "").strip()
        return [secret] if secret else []

    async def fetch(self) -> IssuedToken:
        """POST the client-credentials grant and parse the answer."""
        pair = f"{quote(self.client_id, safe='')}:{quote(self._secret(), safe='')}"
        basic = base64.b64encode(pair.encode("utf-8")).decode("ascii")
        form = {"grant_type": "client_credentials"}
        if self.scope:
            form["scope"] = self.scope
        try:
            async with self._client.stream(
                "POST", self.token_url, data=form, headers={"Authorization": f"Basic {basic}"}
            ) as response:
                body = await _read_limited(response)
        except httpx.TimeoutException:
            raise AuthError(f"{self.description} timed out") from None
        except httpx.HTTPError as exc:
            raise AuthError(f"{self.description} unreachable ({type(exc).__name__})") from None
        if response.status_code >= 400:
            code = _error_code(body)
            detail = f" ({code})" if code else ""
            raise AuthError(f"{self.description} answered HTTP {response.status_code}{detail}")
        return parse_token_response(body)

    async def aclose(self) -> None:
        """Close the token endpoint's connections."""
        await self._client.aclose()


async def _read_limited(response: httpx.Response) -> bytes:
    body = b""
    async for part in response.aiter_bytes():
        body += part
        if len(body) > MAX_RESPONSE_BYTES:
            raise AuthError("the token response is too large")
    return body


def parse_token_response(body: bytes) -> IssuedToken:
    """An ``IssuedToken`` from a token endpoint's JSON answer; raises ``AuthError``."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise AuthError("the token response is not JSON") from None
    if not isinstance(data, dict):
        raise AuthError("the token response is not a JSON object")
    token = data.get("access_token")
    if not isinstance(token, str) or not token.strip() or any(c.isspace() for c in token):
        raise AuthError("the token response has no usable access_token")
    token_type = data.get("token_type", "Bearer")
    if not isinstance(token_type, str) or token_type.lower() != "bearer":
        raise AuthError("the token response is not a bearer token")
    return IssuedToken(token, lifetime_seconds(data.get("expires_in"), "expires_in"))


def _error_code(body: bytes) -> str:
    """The RFC 6749 ``error`` code of an error answer, if it looks like one."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ""
    code = data.get("error") if isinstance(data, dict) else None
    return code if isinstance(code, str) and _ERROR_CODE.fullmatch(code) else ""
