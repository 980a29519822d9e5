"""Bearer-credential checks of the reference service: static key or issued tokens.

Two modes. With ``--require-key-env ENV`` every completion request must carry
``Authorization: Bearer <value of ENV>``. Token mode (``POST /__auth`` with
``clientId``, ``clientSecret`` and ``lifetime`` seconds) makes the service an
OAuth 2.0 client-credentials issuer at ``POST /oauth/token``: it hands out
random opaque tokens that expire after ``lifetime`` and completion requests
then need a currently valid one (the static key is no longer enough).
``POST /__auth/revoke`` invalidates every issued token. The clock is
injected so tests can expire tokens without waiting.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, unquote

Clock = Callable[[], float]
DEFAULT_LIFETIME = 60.0


@dataclass(frozen=True)
class TokenClient:
    """The one client allowed to obtain tokens, and their lifetime."""

    client_id: str
    client_secret: str
    lifetime: float = DEFAULT_LIFETIME


@dataclass(frozen=True)
class TokenAnswer:
    """What ``/oauth/token`` answers: an HTTP status and a JSON object."""

    status: int
    body: dict[str, object]


def bearer(authorization: str | None) -> str | None:
    """The token in an ``Authorization: Bearer ...`` header value."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


class TokenAuthority:
    """Decides whether a request's bearer credential is acceptable."""

    def __init__(self, static_key: str | None = None, clock: Clock = time.monotonic) -> None:
        self._static_key = static_key
        self._clock = clock
        self._client: TokenClient | None = None
        self._issued: dict[str, float] = {}  # token -> expiry on the clock

    @property
    def token_mode(self) -> bool:
        """True while completion requests need an issued token."""
        return self._client is not None

    def enable_tokens(self, client: TokenClient) -> None:
        """Switch to token mode for ``client`` (forgets previously issued tokens)."""
        self._client = client
        self._issued.clear()

    def disable_tokens(self) -> None:
        """Back to the static key (or no auth)."""
        self._client = None
        self._issued.clear()

    def revoke_all(self) -> int:
        """Invalidate every issued token; returns how many were valid."""
        now = self._clock()
        valid = sum(1 for expiry in self._issued.values() if expiry > now)
        self._issued.clear()
        return valid

    def allows(self, authorization: str | None) -> bool:
        """Whether a completion request with this header may proceed."""
        token = bearer(authorization)
        if self._client is not None:
            if token is None:
                return False
            expiry = self._issued.get(token)
            return expiry is not None and expiry > self._clock()
        if self._static_key is None:
            return True
        return token is not None and hmac.compare_digest(token, self._static_key)

    def issue(self, form_body: bytes, authorization: str | None) -> TokenAnswer:
        """Handle a client-credentials token request (form-encoded body)."""
        client = self._client
        if client is None:
            return TokenAnswer(404, {"error": "token_mode_disabled"})
        form = {k: v[0] for k, v in parse_qs(form_body.decode("utf-8", "replace")).items()}
        if form.get("grant_type") != "client_credentials":
            return TokenAnswer(400, {"error": "unsupported_grant_type"})
        client_id, client_secret = form.get("client_id"), form.get("client_secret")
        basic = _basic_credentials(authorization)
        if basic is not None:
            client_id, client_secret = basic
        if client_id != client.client_id or not hmac.compare_digest(
            (client_secret or "").encode(), client.client_secret.encode()
        ):
            return TokenAnswer(401, {"error": "invalid_client"})
        token = secrets.token_urlsafe(24)
        self._issued[token] = self._clock() + client.lifetime
        self._forget_expired()
        body: dict[str, object] = {
            "access_token": token,
            "token_type": "Bearer",
            "expires_in": client.lifetime,
        }
        if form.get("scope"):
            body["scope"] = form["scope"]
        return TokenAnswer(200, body)

    def _forget_expired(self) -> None:
        now = self._clock()
        for token in [t for t, expiry in self._issued.items() if expiry <= now]:
            del self._issued[token]


def _basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(value.strip()).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (unquote(user), unquote(password)) if sep else None
