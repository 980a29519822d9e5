"""Endpoint options: everything the HTTP backend needs to reach one service.

``EndpointOptions`` is a plain, immutable value object. Its field names mirror
``lsp_server.settings`` (``Settings``, ``TransportSettings``,
``CompletionSettings``, ``AuthSettings``) so that the language server can map
its settings onto it field by field; the transport itself never imports the
language server.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Literal, get_args
from urllib.parse import urlsplit

from transport.errors import ConfigurationError

Provider = Literal["auto", "openai", "llamacpp", "ollama"]
FimTemplate = Literal["", "starcoder", "qwen", "deepseek", "codellama"]
FimOrder = Literal["psm", "spm"]
AuthKind = Literal["static", "oauth2-client-credentials", "command"]
#: ``"auto"``: negotiate over TLS, HTTP/1.1 on http://; ``True``: HTTP/2 only; ``False``: HTTP/1.1
Http2Mode = Literal["auto"] | bool

PROVIDERS: tuple[str, ...] = get_args(Provider)
FIM_TEMPLATES: tuple[str, ...] = get_args(FimTemplate)
AUTH_KINDS: tuple[str, ...] = get_args(AuthKind)

DEFAULT_PROVIDER: Provider = "auto"
DEFAULT_API_KEY_ENV = "SCOPECACHE_API_KEY"
DEFAULT_MAX_CONNECTIONS = 12
DEFAULT_MAX_KEEPALIVE = 8
DEFAULT_KEEPALIVE_EXPIRY = 120.0
DEFAULT_CONNECT_TIMEOUT = 3.0
DEFAULT_READ_TIMEOUT = 15.0
DEFAULT_WRITE_TIMEOUT = 5.0
DEFAULT_POOL_TIMEOUT = 2.0
DEFAULT_KEEP_WARM_SECONDS = 45.0
DEFAULT_MAX_RESPONSE_CHARS = 8192
DEFAULT_MAX_TOKENS = 64
DEFAULT_TEMPERATURE = 0.0
DEFAULT_PREFIX_CHARS = 4000
DEFAULT_SUFFIX_CHARS = 1000
DEFAULT_REFRESH_AT = 0.8
#: the batch size (``-b``) of llama-server's code-completion presets (``--fim-qwen-*``,
#: what llama.vim and llama.vscode start); ``/infill`` cuts a longer prompt. Its
#: default is 2048: a prompt sized for 1024 fits that too
DEFAULT_MAX_PROMPT_TOKENS = 1024
#: how long Ollama keeps the model loaded after a request
DEFAULT_KEEP_ALIVE = "30m"
#: consecutive failures that open the circuit breaker
DEFAULT_BREAKER_THRESHOLD = 5
#: seconds the breaker stays open before one probe request is let through
DEFAULT_BREAKER_COOLDOWN = 5.0
#: longest Retry-After we wait for inside one request (keystroke path)
DEFAULT_MAX_RETRY_WAIT = 0.25


@dataclass(frozen=True, kw_only=True)
class EndpointOptions:
    """How to reach one completion service and what to ask it."""

    #: base URL, e.g. ``https://host:8443/v1``
    endpoint: str
    provider: Provider = DEFAULT_PROVIDER
    model: str = ""
    #: name of the environment variable that holds the API key
    api_key_env: str = DEFAULT_API_KEY_ENV

    # -- network (transport.*)
    #: ``"ip"`` or ``"ip:port"``; empty uses the system resolver
    nameservers: tuple[str, ...] = ()
    ca_file: str | None = None
    http2: Http2Mode = "auto"
    verify_tls: bool = True
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_keepalive: int = DEFAULT_MAX_KEEPALIVE
    keepalive_expiry: float = DEFAULT_KEEPALIVE_EXPIRY
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    write_timeout: float = DEFAULT_WRITE_TIMEOUT
    pool_timeout: float = DEFAULT_POOL_TIMEOUT
    #: after this many idle seconds (while in use) one cheap request keeps the
    #: connection open; 0 turns keep-warm off
    keep_warm_seconds: float = DEFAULT_KEEP_WARM_SECONDS
    #: a completion longer than this is abandoned (and therefore not cached)
    max_response_chars: int = DEFAULT_MAX_RESPONSE_CHARS

    # -- what is asked (completion.*)
    max_tokens: int = DEFAULT_MAX_TOKENS
    temperature: float = DEFAULT_TEMPERATURE
    stop: tuple[str, ...] = ()
    fim_template: FimTemplate = ""
    #: prefix first (psm) or, where the template has it, suffix first (spm)
    fim_order: FimOrder = "psm"
    #: the prompt's character budget is prefix_chars + suffix_chars; when one
    #: side is shorter, the other may use the rest
    prefix_chars: int = DEFAULT_PREFIX_CHARS
    suffix_chars: int = DEFAULT_SUFFIX_CHARS
    #: the prompt's token limit where the service does not say (llama.cpp's ``-b``)
    max_prompt_tokens: int = DEFAULT_MAX_PROMPT_TOKENS
    #: llama.cpp with several slots: each document on a slot of its own,
    #: speculative prefetches on another (``transport.slots``)
    slot_pinning: bool = False
    #: Ollama's ``keep_alive`` ("" = the service's default)
    keep_alive: str = DEFAULT_KEEP_ALIVE

    # -- resilience
    breaker_threshold: int = DEFAULT_BREAKER_THRESHOLD
    breaker_cooldown: float = DEFAULT_BREAKER_COOLDOWN
    max_retry_wait: float = DEFAULT_MAX_RETRY_WAIT

    # -- auth.*
    auth_kind: AuthKind = "static"
    token_url: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    scope: str | None = None
    command: tuple[str, ...] | str | None = None
    refresh_at: float = DEFAULT_REFRESH_AT

    def validate(self) -> None:
        """Raise ``ConfigurationError`` naming the first unusable value."""
        parts = urlsplit(self.endpoint)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(
                f"endpoint must be an http:// or https:// URL (got {self.endpoint!r})"
            )
        if self.provider not in PROVIDERS:
            raise ConfigurationError(f"unknown provider {self.provider!r}")
        if self.fim_template not in FIM_TEMPLATES:
            raise ConfigurationError(f"unknown FIM template {self.fim_template!r}")
        if not (isinstance(self.http2, bool) or self.http2 == "auto"):
            raise ConfigurationError(
                f'transport.http2 must be "auto", true or false (got {self.http2!r})'
            )
        if self.auth_kind not in AUTH_KINDS:
            raise ConfigurationError(f"unknown auth kind {self.auth_kind!r}")
        if self.auth_kind == "oauth2-client-credentials" and not (
            self.token_url and self.client_id and self.client_secret_env
        ):
            raise ConfigurationError(
                "auth.kind oauth2-client-credentials needs auth.tokenUrl, auth.clientId "
                "and auth.clientSecretEnv"
            )
        if self.auth_kind == "command" and not self.command:
            raise ConfigurationError("auth.kind command needs auth.command")
        if not 0.1 <= self.refresh_at <= 0.95:
            raise ConfigurationError("auth.refreshAt must be between 0.1 and 0.95")
        if self.max_connections < 1 or self.max_keepalive < 0:
            raise ConfigurationError("pool limits must be positive")
        if self.max_response_chars < 1 or self.max_tokens < 1:
            raise ConfigurationError("maxResponseChars and maxTokens must be >= 1")
        if self.prefix_chars < 0 or self.suffix_chars < 0:
            raise ConfigurationError("prompt budgets must be >= 0")
        if self.max_prompt_tokens < 16:
            raise ConfigurationError("completion.maxPromptTokens must be >= 16")

    @property
    def host(self) -> str:
        """The endpoint's host name (or IP literal), without brackets."""
        return urlsplit(self.endpoint).hostname or ""

    @property
    def port(self) -> int:
        """The endpoint's port, defaulted from the scheme."""
        parts = urlsplit(self.endpoint)
        return parts.port or (443 if parts.scheme == "https" else 80)

    @property
    def origin(self) -> str:
        """``scheme://host:port`` of the endpoint (llama.cpp and Ollama paths hang here)."""
        parts = urlsplit(self.endpoint)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def protocols(self) -> tuple[bool, bool]:
        """``(http1, http2)``: which HTTP versions may be spoken to this endpoint.

        On ``http://`` there is no negotiation: HTTP/2 there means prior
        knowledge, so ``"auto"`` speaks HTTP/1.1 (what self-hosted servers
        speak) and ``True`` speaks h2c only. Over TLS, ALPN offers what is
        allowed and the server picks.
        """
        cleartext = urlsplit(self.endpoint).scheme == "http"
        if self.http2 == "auto":
            return (True, not cleartext)
        if self.http2:
            return (False, True)
        return (True, False)

    @property
    def base_url(self) -> str:
        """The endpoint without a trailing slash."""
        return self.endpoint.rstrip("/")

    @property
    def openai_base(self) -> str:
        """Where OpenAI paths hang: the endpoint, or ``{origin}/v1`` when it has no path.

        So ``http://host:8080`` and ``http://host:8080/v1`` both reach
        ``/v1/completions``.
        """
        if urlsplit(self.endpoint).path.strip("/"):
            return self.base_url
        return f"{self.origin}/v1"

    def replace(self, **changes: object) -> EndpointOptions:
        """A copy with some fields changed."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]
