"""Which credentials provider the ``auth.kind`` setting names, built from its settings.

- ``static``: ``provider.StaticKeyAuth`` (the key from ``apiKeyEnv``);
- ``oauth2-client-credentials``: ``oauth.ClientCredentialsSource``
  behind ``tokens.RefreshingTokenAuth`` (prefetch, refresh-ahead);
- ``command``: ``command.CommandTokenSource`` behind the same
  ``RefreshingTokenAuth``.

A kind's missing settings are a ``ConfigurationError`` that names them.
"""

from __future__ import annotations

from collections.abc import Mapping

from transport.auth.provider import AuthProvider, StaticKeyAuth
from transport.errors import ConfigurationError
from transport.options import EndpointOptions


def auth_for(
    options: EndpointOptions, *, environ: Mapping[str, str] | None = None
) -> AuthProvider:
    """The auth provider ``options.auth_kind`` names (``environ``: defaults to the process's)."""
    # The token kinds import httpx/asyncio machinery; static needs none of it.
    if options.auth_kind == "static":
        return StaticKeyAuth(options.api_key_env, environ=environ)
    if options.auth_kind == "oauth2-client-credentials":
        from transport.auth.oauth import ClientCredentialsSource
        from transport.auth.tokens import RefreshingTokenAuth

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
        from transport.auth.command import CommandTokenSource
        from transport.auth.tokens import RefreshingTokenAuth

        if not options.command:
            raise ConfigurationError("auth.kind command needs auth.command")
        command = CommandTokenSource(options.command)
        return RefreshingTokenAuth(command, refresh_at=options.refresh_at)
    raise ConfigurationError(f"unknown auth kind {options.auth_kind!r}")
