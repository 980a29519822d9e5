"""Credentials for the completion service, behind one small interface.

``AuthProvider`` is what the HTTP backend asks for headers. ``header()`` is
on the request path, so it must answer from memory whenever a valid
credential is cached; fetching belongs in ``start()`` and in background
refreshes. ``on_rejected(headers)`` is called once when the service
answers 401/403 to the request that carried ``headers``, to force one
refresh before the single retry. ``secrets()`` lists the values that must
never appear in logs (the backend's redaction filter uses it).

The kinds (``auth.kind``):

- ``static``: ``StaticKeyAuth`` reads the environment variable named by
  ``apiKeyEnv`` at request time, so a key exported after start-up is picked
  up; no variable, no header.
- ``oauth2-client-credentials``: ``auth_oauth.ClientCredentialsSource``
  behind ``auth_tokens.RefreshingTokenAuth`` (prefetch, refresh-ahead).
- ``command``: ``auth_command.CommandTokenSource`` behind the same
  ``RefreshingTokenAuth``.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping

from transport.errors import ConfigurationError
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)


def bearer_token(headers: Mapping[str, str] | None) -> str | None:
    """The token of an ``Authorization: Bearer ...`` header in ``headers``."""
    if not headers:
        return None
    for name, value in headers.items():
        if name.lower() == "authorization":
            scheme, _, token = value.partition(" ")
            return token.strip() or None if scheme.lower() == "bearer" else None
    return None


class AuthProvider(ABC):
    """Where the ``Authorization`` header comes from."""

    async def start(self) -> None:
        """Obtain the first credential (called at backend start, off the request path)."""
        return None

    @abstractmethod
    async def header(self) -> dict[str, str]:
        """Headers to add to a request; never blocks on a fetch while a token is valid."""

    async def on_rejected(self, rejected: Mapping[str, str] | None = None) -> bool:
        """The service refused the request that carried ``rejected``: refresh once.

        True if a retry makes sense (a different credential is now available).
        """
        return False

    def secrets(self) -> list[str]:
        """Credential values that must be masked in logs."""
        return []

    async def aclose(self) -> None:
        """Stop background refreshes."""
        return None


class StaticKeyAuth(AuthProvider):
    """A bearer key from an environment variable, read at request time."""

    def __init__(self, env_var: str, *, environ: Mapping[str, str] | None = None) -> None:
        self._env_var = env_var
        self._environ = environ if environ is not None else os.environ

    def _key(self) -> str:
        return self._environ.get(self._env_var, "").strip()

    async def header(self) -> dict[str, str]:
        """``Authorization: Bearer <key>``, or nothing when the variable is unset."""
        key = self._key()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def secrets(self) -> list[str]:
        """The key itself."""
        key = self._key()
        return [key] if key else []


class NoAuth(AuthProvider):
    """No credentials at all."""

    async def header(self) -> dict[str, str]:
        """No headers."""
        return {}


def auth_for(
    options: EndpointOptions, *, environ: Mapping[str, str] | None = None
) -> AuthProvider:
    """The auth provider ``options.auth_kind`` names (``environ``: defaults to the process's)."""
    # The token kinds import httpx/asyncio machinery; static needs none of it.
    if options.auth_kind == "static":
        return StaticKeyAuth(options.api_key_env, environ=environ)
    if options.auth_kind == "oauth2-client-credentials":
        from transport.auth_oauth import ClientCredentialsSource
        from transport.auth_tokens import RefreshingTokenAuth

        if not (options.token_url and options.client_id and options.client_secret_env):
            raise ConfigurationError(
                "auth.kind oauth2-client-credentials needs auth.tokenUrl, auth.clientId "
                "and auth.clientSecretEnv"
            )
        source = ClientCredentialsSource(
            options.token_url,
            options.client_id,
            options.client_secret_env,
            scope=options.scope,
            environ=environ,
            ca_file=options.ca_file,
            verify_tls=options.verify_tls,
        )
        return RefreshingTokenAuth(source, refresh_at=options.refresh_at)
    if options.auth_kind == "command":
        from transport.auth_command import CommandTokenSource
        from transport.auth_tokens import RefreshingTokenAuth

        if not options.command:
            raise ConfigurationError("auth.kind command needs auth.command")
        command = CommandTokenSource(options.command)
        return RefreshingTokenAuth(command, refresh_at=options.refresh_at)
    raise ConfigurationError(f"unknown auth kind {options.auth_kind!r}")
