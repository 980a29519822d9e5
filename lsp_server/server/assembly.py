"""Build the server's parts (backend, L1 store, L2 tier) from settings.

The only place that knows how settings map onto ``transport`` and ``cache``
objects, so the handlers and the pipeline never see configuration details.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from cache.heat import ContextHeat
from cache.l2.base import L2Store
from cache.policies import make_policy
from cache.store import CompletionStore
from lsp_server.settings import Settings
from transport.backend import CompletionBackend
from transport.options import EndpointOptions

logger = logging.getLogger(__name__)


def endpoint_options(settings: Settings) -> EndpointOptions:
    """Map the server settings onto the transport's options."""
    assert settings.endpoint is not None
    t = settings.transport
    c = settings.completion
    a = settings.auth
    command: tuple[str, ...] | str | None
    command = tuple(a.command) if isinstance(a.command, list) else a.command
    return EndpointOptions(
        endpoint=settings.endpoint,
        provider=settings.provider,
        model=settings.model,
        api_key_env=settings.api_key_env,
        nameservers=tuple(t.nameservers),
        ca_file=t.ca_file,
        http2=t.http2,
        verify_tls=t.verify_tls,
        max_connections=t.max_connections,
        max_keepalive=t.max_keepalive,
        keepalive_expiry=t.keepalive_expiry,
        connect_timeout=t.connect_timeout,
        read_timeout=t.read_timeout,
        write_timeout=t.write_timeout,
        pool_timeout=t.pool_timeout,
        keep_warm_seconds=t.keep_warm_seconds,
        max_response_chars=t.max_response_chars,
        max_tokens=c.max_tokens,
        temperature=c.temperature,
        stop=tuple(c.stop),
        fim_template=c.fim_template,
        fim_order=c.fim_order,
        prefix_chars=c.prefix_chars,
        suffix_chars=c.suffix_chars,
        max_prompt_tokens=c.max_prompt_tokens,
        slot_pinning=c.slot_pinning,
        keep_alive=c.keep_alive,
        auth_kind=a.kind,
        token_url=a.token_url,
        client_id=a.client_id,
        client_secret_env=a.client_secret_env,
        scope=a.scope,
        command=command,
        refresh_at=a.refresh_at,
    )


def backend_signature(settings: Settings) -> tuple[Any, ...]:
    """What, when changed, needs a new backend."""
    if settings.endpoint is None:
        return (None,)
    return (endpoint_options(settings),)


def build_backend(settings: Settings) -> CompletionBackend | None:
    """The HTTP backend for the configured endpoint, or None when there is none."""
    if settings.endpoint is None:
        return None
    from transport.factory import build_backend as build_http_backend

    if not settings.transport.verify_tls:
        logger.warning("TLS certificate verification is OFF (transport.verifyTls = false)")
    return build_http_backend(endpoint_options(settings))


def store_signature(settings: Settings) -> tuple[Any, ...]:
    """What, when changed, needs a new L1 store."""
    c = settings.cache
    return (c.policy, c.capacity, c.k, c.alpha, c.ttl_seconds)


def build_store(settings: Settings, heat: ContextHeat | None = None) -> CompletionStore:
    """The L1 store with the configured policy (``heat`` drives hybrid's alpha "auto")."""
    c = settings.cache
    policy = make_policy(c.policy, c.capacity, k=c.k, alpha=c.alpha, ttl=c.ttl_seconds, heat=heat)
    return CompletionStore(policy)


def cache_namespace(settings: Settings) -> str:
    """Endpoint + model + tenant: answers never cross these."""
    return "\x1f".join((settings.endpoint or "", settings.model, settings.cache.namespace))


def l2_signature(settings: Settings) -> tuple[Any, ...]:
    """What, when changed, needs a new L2 store."""
    c = settings.cache
    return (
        c.l2,
        c.sqlite_path,
        c.redis_url,
        cache_namespace(settings),
        c.l2_max_entries,
        c.ttl_seconds,
        c.namespace_secret_env,
    )


def namespace_secret(settings: Settings) -> bytes | None:
    """The Redis key secret from its environment variable, if set."""
    value = os.environ.get(settings.cache.namespace_secret_env)
    return value.encode() if value else None


def build_l2(settings: Settings) -> L2Store | None:
    """The configured shared tier (not yet started), or None for ``cache.l2 = "none"``."""
    c = settings.cache
    namespace = cache_namespace(settings)
    if c.l2 == "sqlite":
        from cache.l2.sqlite.store import SqliteStore

        return SqliteStore(
            c.sqlite_path or None,
            namespace,
            max_entries=c.l2_max_entries,
            ttl_seconds=c.ttl_seconds,
        )
    if c.l2 == "redis":
        from cache.l2.redis import RedisStore

        return RedisStore(
            c.redis_url,
            namespace,
            secret=namespace_secret(settings),
            ttl_seconds=c.ttl_seconds,
        )
    return None
