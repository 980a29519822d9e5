"""Settings: one typed, fully defaulted model for every way they arrive.

Settings come as LSP ``initializationOptions``, as
``workspace/didChangeConfiguration`` (``settings.scopecache`` or the object
itself), camelCase, or from a TOML file (``[scopecache]`` or
``[tool.scopecache]`` in pyproject.toml), snake_case. ``parse_settings``
accepts both spellings, applies every valid key, keeps the default for every
invalid one and returns one readable problem per rejected key, so the server
can tell the user once and keep running.
"""

from __future__ import annotations

import dataclasses
import logging
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

logger = logging.getLogger(__name__)

Policy = Literal["none", "lru", "lfu", "arc", "lruk", "hybrid"]
Provider = Literal["openai", "llamacpp", "ollama"]
L2Kind = Literal["none", "sqlite", "redis"]
AuthKind = Literal["static", "oauth2-client-credentials", "command"]
FimTemplate = Literal["", "starcoder", "qwen", "deepseek", "codellama"]

DEFAULT_EXCLUDE = (
    ".env",
    ".env.*",
    "*.pem",
    "*.key",
    "id_rsa*",
    "id_ed25519*",
    ".netrc",
    "**/secrets/**",
    "**/.secrets/**",
)


def _check(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(message)


@dataclass(kw_only=True)
class CacheSettings:
    """The L1 policy and the shared L2 tier."""

    policy: Policy = "hybrid"
    #: L1 entries (one entry per upstream answer)
    capacity: int = 2048
    #: K of the LRU-K region (and of the ``lruk`` policy)
    k: int = 2
    #: ``"auto"`` adapts the hybrid's balance to the editing context;
    #: a number in [0.3, 0.7] fixes it
    alpha: float | Literal["auto"] = "auto"
    #: 0 keeps entries until evicted
    ttl_seconds: float = 0.0
    l2: L2Kind = "sqlite"
    #: empty: ``scopecache/l2.sqlite`` in the user cache directory
    sqlite_path: str = ""
    redis_url: str = "redis://127.0.0.1:6379/0"
    #: tenant name mixed into every L2 key (with endpoint and model)
    namespace: str = ""
    #: env var holding the secret that HMACs Redis keys
    namespace_secret_env: str = "SCOPECACHE_NAMESPACE_SECRET"
    #: L2 size cap in entries
    l2_max_entries: int = 100_000
    #: entries loaded from L2 into L1 at start-up (0: none)
    prewarm: int = 256

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.capacity >= 1, "capacity must be a positive integer")
        _check(self.k >= 1, "k must be at least 1")
        _check(
            self.alpha == "auto" or 0.3 <= float(self.alpha) <= 0.7,
            'alpha must be "auto" or a number in [0.3, 0.7]',
        )
        _check(self.ttl_seconds >= 0, "ttlSeconds must be >= 0")
        _check(self.l2_max_entries >= 1, "l2MaxEntries must be a positive integer")
        _check(self.prewarm >= 0, "prewarm must be >= 0")


@dataclass(kw_only=True)
class TransportSettings:
    """How the completion service is reached."""

    #: ``"ip"`` or ``"ip:port"``; empty uses the system resolver
    nameservers: list[str] = field(default_factory=list)
    #: extra CA bundle (PEM) to trust
    ca_file: str | None = None
    http2: bool = True
    #: turning verification off needs this explicit setting and logs a warning
    verify_tls: bool = True
    max_connections: int = 12
    max_keepalive: int = 8
    keepalive_expiry: float = 120.0
    connect_timeout: float = 3.0
    read_timeout: float = 15.0
    write_timeout: float = 5.0
    pool_timeout: float = 2.0
    #: idle connections are checked with a cheap request this often (0: never)
    keep_warm_seconds: float = 45.0
    #: a suggestion longer than this is cut off and not cached
    max_response_chars: int = 8192

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        for ns in self.nameservers:
            _check(bool(re.fullmatch(r"[0-9a-fA-F.:\[\]]+", ns)), f"bad nameserver {ns!r}")
        _check(self.max_connections >= 1, "maxConnections must be >= 1")
        _check(self.max_keepalive >= 0, "maxKeepalive must be >= 0")
        for name in ("connect_timeout", "read_timeout", "write_timeout", "pool_timeout"):
            _check(getattr(self, name) > 0, f"{_camel(name)} must be > 0")
        _check(self.keep_warm_seconds >= 0, "keepWarmSeconds must be >= 0")
        _check(self.max_response_chars >= 1, "maxResponseChars must be >= 1")


@dataclass(kw_only=True)
class CompletionSettings:
    """What is asked of the model and how much context it sees."""

    max_tokens: int = 64
    temperature: float = 0.0
    stop: list[str] = field(default_factory=list)
    #: explicit fill-in-the-middle template for OpenAI-compatible servers
    fim_template: FimTemplate = ""
    #: prompt prefix window (characters / lines before the cursor)
    prefix_chars: int = 4000
    prefix_lines: int = 120
    #: prompt suffix window, never past the enclosing scope
    suffix_chars: int = 1000
    suffix_lines: int = 30
    #: scope-local text fingerprinted into the cache key
    scope_chars: int = 2000
    #: ask for several lines after a block opener
    multiline: bool = True

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.max_tokens >= 1, "maxTokens must be >= 1")
        _check(0.0 <= self.temperature <= 2.0, "temperature must be in [0, 2]")
        for name in ("prefix_chars", "prefix_lines", "suffix_chars", "suffix_lines", "scope_chars"):
            _check(getattr(self, name) >= 1, f"{_camel(name)} must be >= 1")


@dataclass(kw_only=True)
class ThrottleSettings:
    """When a miss may go upstream; hits are never throttled."""

    #: a miss at the start of a line (only indentation before the cursor) goes at once
    line_start_immediate: bool = True
    #: the shortest wait for other misses, while typing fast
    min_delay_ms: float = 15.0
    #: the longest wait, when upstream is slow
    max_delay_ms: float = 120.0

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(0 <= self.min_delay_ms <= self.max_delay_ms, "need 0 <= minDelayMs <= maxDelayMs")


@dataclass(kw_only=True)
class SpeculativeSettings:
    """Background prefetch of the state after accepting a suggestion."""

    enabled: bool = True
    max_per_minute: int = 30

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.max_per_minute >= 0, "maxPerMinute must be >= 0")


@dataclass(kw_only=True)
class AuthSettings:
    """How the bearer credential is obtained."""

    kind: AuthKind = "static"
    token_url: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    scope: str | None = None
    command: list[str] | str | None = None
    #: fraction of a token's lifetime after which it is refreshed in the background
    refresh_at: float = 0.8

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(0.1 <= self.refresh_at <= 0.95, "refreshAt must be in [0.1, 0.95]")


@dataclass(kw_only=True)
class Settings:
    """Every scopecache setting, with its default."""

    #: base URL of the completion service; none turns completions off
    endpoint: str | None = None
    provider: Provider = "openai"
    model: str = ""
    #: name of the environment variable that holds the API key
    api_key_env: str = "SCOPECACHE_API_KEY"
    cache: CacheSettings = field(default_factory=CacheSettings)
    transport: TransportSettings = field(default_factory=TransportSettings)
    completion: CompletionSettings = field(default_factory=CompletionSettings)
    throttle: ThrottleSettings = field(default_factory=ThrottleSettings)
    speculative: SpeculativeSettings = field(default_factory=SpeculativeSettings)
    auth: AuthSettings = field(default_factory=AuthSettings)
    #: files never sent upstream, cached or recorded (glob patterns)
    exclude: list[str] = field(default_factory=lambda: list(DEFAULT_EXCLUDE))
    #: documents larger than this are not parsed (served with text-only keys)
    max_parse_bytes: int = 2_000_000
    #: write the served session as a scopecache-trace file ("" = off)
    record_trace: str = ""
    #: include document texts in the recorded trace (they are source code)
    record_text: bool = False
    #: serve Prometheus /metrics and the dashboard on 127.0.0.1:PORT (0 = off)
    metrics_port: int = 0
    metrics_host: str = "127.0.0.1"

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        if self.endpoint is not None:
            _check(
                bool(re.match(r"^https?://[^/\s]+", self.endpoint)),
                "endpoint must be an http:// or https:// URL",
            )
        _check(
            bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", self.api_key_env)),
            "apiKeyEnv must be an environment variable name",
        )
        _check(self.max_parse_bytes >= 1, "maxParseBytes must be >= 1")
        _check(0 <= self.metrics_port <= 65535, "metricsPort must be a TCP port")


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class _Invalid(ValueError):
    pass


def _coerce(value: Any, hint: Any) -> Any:
    """Check ``value`` against a (simple) type hint; return it converted."""
    origin = get_origin(hint)
    if origin is Literal:
        allowed = get_args(hint)
        if value not in allowed:
            raise _Invalid("must be one of " + ", ".join(repr(a) for a in allowed))
        return value
    if origin in (list,):
        (item,) = get_args(hint)
        if isinstance(value, str | bytes) or not isinstance(value, list | tuple):
            raise _Invalid("must be a list")
        return [_coerce(v, item) for v in value]
    if origin in (Union, UnionType):
        options = get_args(hint)
        if value is None and type(None) in options:
            return None
        errors = []
        for option in options:
            if option is type(None):
                continue
            try:
                return _coerce(value, option)
            except _Invalid as exc:
                errors.append(str(exc))
        raise _Invalid(" or ".join(dict.fromkeys(errors)))
    if hint is bool:
        if not isinstance(value, bool):
            raise _Invalid("must be true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Invalid("must be an integer")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _Invalid("must be a number")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise _Invalid("must be a string")
        return value
    raise _Invalid(f"unsupported type {hint!r}")  # pragma: no cover - model bug


def _apply(target: Any, data: Mapping[str, Any], path: str, problems: list[str]) -> None:
    hints = get_type_hints(type(target))
    names = {f.name for f in dataclasses.fields(target)}
    for raw_key, value in data.items():
        name = _snake(raw_key) if raw_key not in names else raw_key
        key_path = f"{path}{_camel(name)}"
        if name not in names:
            problems.append(f"{path}{raw_key}: unknown setting")
            continue
        current = getattr(target, name)
        if dataclasses.is_dataclass(current):
            if not isinstance(value, Mapping):
                problems.append(f"{key_path}: must be a table/object")
                continue
            _apply(current, value, key_path + ".", problems)
            continue
        try:
            converted = _coerce(value, hints[name])
        except _Invalid as exc:
            problems.append(f"{key_path}: {exc} (got {value!r})")
            continue
        setattr(target, name, converted)
        try:
            target.validate()
        except ValueError as exc:
            setattr(target, name, current)
            problems.append(f"{key_path}: {exc} (got {value!r})")


def parse_settings(
    data: Mapping[str, Any] | None, base: Settings | None = None
) -> tuple[Settings, list[str]]:
    """Build settings from camelCase or snake_case data.

    Returns the settings (defaults, or a copy of ``base``, with every valid
    key applied) and a list of problems, one per rejected key.
    """
    settings = dataclasses.replace(base) if base is not None else Settings()
    if base is not None:
        # Deep-copy the nested groups so that a failed update leaves base alone.
        for f in dataclasses.fields(settings):
            value = getattr(settings, f.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                setattr(settings, f.name, dataclasses.replace(value))
    problems: list[str] = []
    if data is None:
        return settings, problems
    if not isinstance(data, Mapping):
        return settings, ["settings must be an object"]
    _apply(settings, data, "", problems)
    return settings, problems


def settings_from_client(payload: Any) -> Mapping[str, Any] | None:
    """Unwrap ``{"settings": {"scopecache": {}}}``, ``{"scopecache": {}}`` or the object."""
    if not isinstance(payload, Mapping):
        return None
    data: Mapping[str, Any] = payload
    outer = data.get("settings")
    if isinstance(outer, Mapping):
        data = outer
    inner = data.get("scopecache")
    if isinstance(inner, Mapping):
        return inner
    return data


class SettingsFileError(Exception):
    """A settings file could not be read or parsed."""


def load_toml(path: str | Path) -> Mapping[str, Any]:
    """Read the scopecache table of a TOML file (``[scopecache]`` or ``[tool.scopecache]``)."""
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except OSError as exc:
        raise SettingsFileError(f"cannot read {path}: {exc.strerror}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise SettingsFileError(f"{path} is not valid TOML: {exc}") from exc
    if "scopecache" in data:
        table = data["scopecache"]
    else:
        table = data.get("tool", {}).get("scopecache", {})
    if not isinstance(table, dict):
        raise SettingsFileError(f"{path}: [scopecache] must be a table")
    return table


def settings_to_dict(settings: Settings) -> dict[str, Any]:
    """The settings as camelCase JSON-able data (for stats and replay output)."""

    def convert(obj: Any) -> Any:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            return {_camel(f.name): convert(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
        if isinstance(obj, list | tuple):
            return [convert(v) for v in obj]
        return obj

    result = convert(settings)
    assert isinstance(result, dict)
    return result
