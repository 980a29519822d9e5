"""Settings: one typed, fully defaulted model for every way they arrive.

Nested ``kw_only`` dataclasses, one per group (``cache``, ``transport``,
``completion``, ...), each field with its default and a ``#:`` comment (the
VS Code schema is generated from them). Each group's ``validate`` names the
first bad value, with the key spelled as the client writes it (camelCase).
How settings are read from the client, a TOML file or written back out lives
in ``lsp_server.server.settings_codec``.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Literal, get_args

logger = logging.getLogger(__name__)

Policy = Literal["none", "lru", "lfu", "arc", "lruk", "hybrid"]
Provider = Literal["auto", "openai", "llamacpp", "ollama"]
L2Kind = Literal["none", "sqlite", "redis"]
AuthKind = Literal["static", "oauth2-client-credentials", "command"]
FimTemplate = Literal["", "starcoder", "qwen", "deepseek", "codellama"]
PromptWindowKind = Literal["anchored", "sliding", "lines", "tokens"]
FimOrder = Literal["psm", "spm"]
MidLine = Literal["closers", "always", "never"]
#: ``transport.http2``: ``"auto"`` negotiates, ``True`` requires h2, ``False`` never offers it
Http2Mode = Literal["auto"] | bool

#: every ``cache.policy`` value
POLICIES: tuple[str, ...] = get_args(Policy)

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

#: loopback ports asked for a completion server, in order of preference
DEFAULT_DISCOVERY_PORTS = (8012, 8080, 11434, 1234, 8000)


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
    #: "auto": over TLS offer h2 and http/1.1 (ALPN) and speak what the server
    #: picks, on http:// speak HTTP/1.1; true: require HTTP/2 (h2c prior
    #: knowledge on http://); false: HTTP/1.1 only
    http2: Http2Mode = "auto"
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
            _check(getattr(self, name) > 0, f"{camel_case(name)} must be > 0")
        _check(self.keep_warm_seconds >= 0, "keepWarmSeconds must be >= 0")
        _check(self.max_response_chars >= 1, "maxResponseChars must be >= 1")


@dataclass(kw_only=True)
class CompletionSettings:
    """What is asked of the model and how much context it sees."""

    max_tokens: int = 64
    #: generation time allowed once an answer's first line is complete, in
    #: milliseconds (llama.cpp's ``t_max_predict_ms``; the client cuts the
    #: stream for other services); 0: only ``maxTokens`` bounds it
    max_generation_ms: int = 1000
    temperature: float = 0.0
    stop: list[str] = field(default_factory=list)
    #: explicit fill-in-the-middle template for OpenAI-compatible servers
    fim_template: FimTemplate = ""
    #: "spm" puts the suffix first where the template supports it (StarCoder,
    #: CodeLlama), so a server's KV cache reuses more of the prompt
    fim_order: FimOrder = "psm"
    #: prompt prefix window (characters / lines before the cursor)
    prefix_chars: int = 4000
    prefix_lines: int = 120
    #: prompt suffix window, never past the enclosing scope
    suffix_chars: int = 1000
    suffix_lines: int = 30
    #: the anchored window's suffix when it goes after the prefix (``fimOrder``
    #: psm, llama.cpp ``/infill``): the server re-evaluates all of it on every
    #: request, so it is kept to this many characters (whole lines; 0: suffixChars)
    psm_suffix_chars: int = 256
    #: scope-local text fingerprinted into the cache key
    scope_chars: int = 2000
    #: how the prompt's prefix window is cut: "anchored" keeps its start put
    #: so the server's KV cache is reused; "sliding", "lines" and "tokens"
    #: are other clients' designs, kept for the benchmark
    prompt_window: PromptWindowKind = "anchored"
    #: ask for several lines after a block opener
    multiline: bool = True
    #: also offer list completion to clients that show ghost text (read at initialize)
    list_alongside_inline: bool = False
    #: prompt token limit where the service does not tell one (llama.cpp's -b;
    #: 1024 in its code-completion presets, 2048 by default)
    max_prompt_tokens: int = 1024
    #: llama.cpp with several slots: keep each document's requests on one
    #: slot (``id_slot``) and send speculative prefetches to another
    slot_pinning: bool = False
    #: Ollama's keep_alive: how long it keeps the model loaded ("" = its default)
    keep_alive: str = "30m"
    #: suggestions with text after the cursor: ``"closers"`` only when that text is
    #: closing brackets, quotes or whitespace (or the suggestion ends with it),
    #: ``"always"``, or ``"never"``
    mid_line: MidLine = "closers"
    #: ask the service for token probabilities (llama.cpp ``n_probs``, OpenAI
    #: ``logprobs``, Ollama ``logprobs``) and show a suggestion only as far as
    #: the model is sure of it; a service without them is unaffected
    confidence: bool = True
    #: a token the model gave less than this probability ends what is shown of a
    #: suggestion (a suggestion that starts with one is not shown); 0 shows all.
    #: 0.35 measured on Qwen2.5-Coder-0.5B: a third fewer wrong suggestions for
    #: 1% fewer characters saved (``tests.bench.confidence_threshold``)
    min_probability: float = 0.35
    #: past a suggestion's first token the bar is at least this: a likely start
    #: is shown only as far as the model stays sure of what follows. 0.6 measured
    #: on Qwen2.5-Coder-0.5B: 30% fewer wrong suggestions for 0.4% fewer
    #: characters saved (``tests.bench.confidence_threshold``)
    min_onward_probability: float = 0.6
    #: where the model is sure, let a one-line answer run on past its line
    #: (within ``maxGenerationMs``) and keep the lines after it in the cache,
    #: so typing on through them is served from memory (needs ``confidence``).
    #: Off: on a one-slot CPU server it kept the slot longer and saved less
    #: (``tests.bench.confidence_ab``)
    run_on: bool = False

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.max_tokens >= 1, "maxTokens must be >= 1")
        _check(0.0 <= self.min_probability <= 0.99, "minProbability must be in [0, 0.99]")
        _check(
            0.0 <= self.min_onward_probability <= 0.99, "minOnwardProbability must be in [0, 0.99]"
        )
        _check(self.max_generation_ms >= 0, "maxGenerationMs must be >= 0")
        _check(self.max_prompt_tokens >= 16, "maxPromptTokens must be >= 16")
        _check(0.0 <= self.temperature <= 2.0, "temperature must be in [0, 2]")
        for name in ("prefix_chars", "prefix_lines", "suffix_chars", "suffix_lines", "scope_chars"):
            _check(getattr(self, name) >= 1, f"{camel_case(name)} must be >= 1")
        _check(self.psm_suffix_chars >= 0, "psmSuffixChars must be >= 0")


@dataclass(kw_only=True)
class ContextSettings:
    """Cross-file context: other open documents' text sent ahead of the prompt."""

    #: send chunks of other open documents and the definitions the file imports
    cross_file: bool = True
    #: most characters of other files' text per request
    max_chars: int = 3000

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.max_chars >= 0, "maxChars must be >= 0")


@dataclass(kw_only=True)
class ThrottleSettings:
    """When a miss may go upstream; hits are never throttled."""

    #: a miss at the start of a line (only indentation before the cursor) goes at once
    line_start_immediate: bool = True
    #: the shortest wait for other misses, while typing fast
    min_delay_ms: float = 15.0
    #: the longest wait, when upstream is slow
    max_delay_ms: float = 120.0
    #: when the service answers slower than the user types, a miss waits for a
    #: pause in the typing (twice the typical gap between keys, at most this; a
    #: local server with nothing at it is asked at once); 0 turns that pacing off
    max_pause_ms: float = 600.0
    #: on a slow service, a miss inside the first word of a line waits for a
    #: pause even when the server is idle (from a letter or two the model
    #: rarely guesses the line, and the next keys come before its answer)
    first_word_waits: bool = True

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(0 <= self.min_delay_ms <= self.max_delay_ms, "need 0 <= minDelayMs <= maxDelayMs")
        _check(self.max_pause_ms >= 0, "maxPauseMs must be >= 0")


@dataclass(kw_only=True)
class SpeculativeSettings:
    """Background prefetch of the state after accepting a suggestion."""

    enabled: bool = True
    max_per_minute: int = 30

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.max_per_minute >= 0, "maxPerMinute must be >= 0")


@dataclass(kw_only=True)
class AcceptanceSettings:
    """What the developer kept of accepted suggestions, and sources that keep too little."""

    #: seconds after an accept when the accepted characters still in the file
    #: are first counted (``retainedChars30s`` in ``scopecache/stats``)
    short_window_seconds: float = 30.0
    #: seconds after an accept when they are counted again (``retainedChars120s``;
    #: never before the short window)
    long_window_seconds: float = 120.0
    #: stop serving from a source when, over its last ``muteOver`` suggestions,
    #: the characters still in the file after the short window are less than
    #: this share of the characters it showed (0 = never)
    mute_below: float = 0.0
    #: how many of a source's latest suggestions ``muteBelow`` judges
    mute_over: int = 50
    #: raise the bar to show and slow the pacing where this developer keeps
    #: little of what is shown (by language, scope kind, source), lower it
    #: where they keep much; learnt in a local file (``completion.kept_bar``)
    learn_bar: bool = True

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        _check(self.short_window_seconds > 0, "shortWindowSeconds must be > 0")
        _check(self.long_window_seconds > 0, "longWindowSeconds must be > 0")
        _check(0.0 <= self.mute_below <= 1.0, "muteBelow must be in [0, 1]")
        _check(self.mute_over >= 1, "muteOver must be >= 1")


@dataclass(kw_only=True)
class DiscoverySettings:
    """Finding a completion server on this machine when no ``endpoint`` is set."""

    #: with no endpoint set, look for a completion server on 127.0.0.1 (only
    #: loopback is ever asked) and use the first that completes code
    enabled: bool = True
    #: loopback ports asked, in order of preference: llama.cpp's code-completion
    #: presets (8012), llama-server's default (8080), Ollama (11434), LM Studio
    #: (1234), vLLM (8000)
    ports: list[int] = field(default_factory=lambda: list(DEFAULT_DISCOVERY_PORTS))

    def validate(self) -> None:
        """Raise ValueError naming the first bad value."""
        for port in self.ports:
            _check(1 <= port <= 65535, "each port must be in 1..65535")
        _check(len(self.ports) <= 32, "at most 32 ports")


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

    #: base URL of the completion service; none: find a local server on
    #: 127.0.0.1 (``discovery``), and with none found completions stay off
    endpoint: str | None = None
    provider: Provider = "auto"
    model: str = ""
    #: name of the environment variable that holds the API key
    api_key_env: str = "SCOPECACHE_API_KEY"
    cache: CacheSettings = field(default_factory=CacheSettings)
    transport: TransportSettings = field(default_factory=TransportSettings)
    completion: CompletionSettings = field(default_factory=CompletionSettings)
    context: ContextSettings = field(default_factory=ContextSettings)
    throttle: ThrottleSettings = field(default_factory=ThrottleSettings)
    speculative: SpeculativeSettings = field(default_factory=SpeculativeSettings)
    acceptance: AcceptanceSettings = field(default_factory=AcceptanceSettings)
    discovery: DiscoverySettings = field(default_factory=DiscoverySettings)
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


def camel_case(name: str) -> str:
    """A field name as clients spell it: ``ttl_seconds`` -> ``ttlSeconds``."""
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)
