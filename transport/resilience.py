"""Resilience: circuit breaker, backoff with jitter, Retry-After, secret redaction.

The policy the HTTP backend applies with these pieces:

* a connection reset or GOAWAY before any byte of the answer arrived
  (``ConnectError``) is retried once, on a fresh connection (httpcore never
  reuses a connection that failed), after a short jittered backoff;
* 429/503 with a ``Retry-After`` no longer than ``max_retry_wait`` is waited
  out and retried once; a longer one surfaces as ``RateLimited`` and trips
  the breaker until it has passed, so the following keystrokes fail fast
  with ``CircuitOpenError`` instead of asking again;
* ``breaker_threshold`` consecutive failures open the breaker for a
  cool-down that doubles (with jitter) on every failed half-open probe;
  after the cool-down one probe is let through; a success closes it. A
  probe refused at connect (nothing listens) costs the service nothing:
  there the cool-down stays at its base, so a restarted server is used
  again within one cool-down.
"""

from __future__ import annotations

import email.utils
import logging
import random
import re
import time
from collections.abc import Callable, Iterable

from transport import errors

logger = logging.getLogger(__name__)

DEFAULT_BACKOFF_BASE = 0.05
DEFAULT_BACKOFF_CAP = 30.0


class Backoff:
    """Exponential backoff with "equal jitter": half fixed, half random."""

    def __init__(
        self,
        base: float = DEFAULT_BACKOFF_BASE,
        cap: float = DEFAULT_BACKOFF_CAP,
        *,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self.base = base
        self.cap = cap
        self._rng = rng

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        ceiling = min(self.cap, self.base * float(2 ** max(0, attempt)))
        return ceiling / 2 + self._rng() * ceiling / 2


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date)."""
    if not value:
        return None
    value = value.strip()
    if re.fullmatch(r"\d+(\.\d+)?", value):
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def counts_against_service(exc: BaseException) -> bool:
    """Whether a failure says the service is unwell (and should open the breaker)."""
    if isinstance(exc, errors.UpstreamStatusError):
        return isinstance(exc, errors.RateLimited) or exc.status >= 500
    return isinstance(exc, errors.NetworkError | errors.UpstreamTimeout)


class CircuitBreaker:
    """closed -> open after N consecutive failures -> half-open probe -> closed."""

    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"

    def __init__(
        self,
        *,
        threshold: int = 5,
        cooldown: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        backoff: Backoff | None = None,
    ) -> None:
        self.threshold = max(1, threshold)
        self._clock = clock
        self._backoff = backoff if backoff is not None else Backoff(cooldown, cooldown * 16)
        self._failures = 0
        self._trips = 0
        self._open_until = 0.0
        self._state = self.CLOSED
        self._probe_in_flight = False
        self._reason = ""

    @property
    def state(self) -> str:
        """``closed``, ``open`` or ``half-open`` (as it stands now)."""
        if self._state == self.OPEN and self._clock() >= self._open_until:
            return self.HALF_OPEN
        return self._state

    def before_request(self) -> None:
        """Raise ``CircuitOpenError`` unless a request may go out now."""
        state = self.state
        if state == self.CLOSED:
            return
        if state == self.OPEN:
            wait = self._open_until - self._clock()
            raise errors.CircuitOpenError(
                f"completion service unavailable ({self._reason}); next try in {wait:.1f}s"
            )
        if self._probe_in_flight:
            raise errors.CircuitOpenError("completion service unavailable; a probe is running")
        self._state = self.HALF_OPEN
        self._probe_in_flight = True

    def record_success(self) -> None:
        """The service answered: close the breaker."""
        if self._state != self.CLOSED:
            logger.info("completion service recovered; circuit closed")
        self._state = self.CLOSED
        self._failures = 0
        self._trips = 0
        self._probe_in_flight = False

    def record_failure(self, exc: BaseException) -> None:
        """Count a failure; open the breaker after ``threshold`` in a row or a failed probe."""
        probing = self._probe_in_flight
        self._probe_in_flight = False
        if not counts_against_service(exc):
            if probing:
                self._state = self.CLOSED
            return
        self._failures += 1
        retry_after = getattr(exc, "retry_after", None)
        if isinstance(exc, errors.RateLimited) and retry_after:
            self.hold(retry_after, f"HTTP {exc.status}, asked to wait")
        elif probing or self._failures >= self.threshold:
            # A refused connection (nothing listens: a local server stopped or
            # restarting) is free to probe again: the cool-down does not grow,
            # so a server that comes back is used within one cool-down.
            trips = 0 if isinstance(exc, errors.ConnectError) else self._trips
            self._open(self._backoff.delay(trips), getattr(exc, "kind", "error"))
            self._trips += 1

    def record_abandoned(self) -> None:
        """The request was cancelled by the caller: no verdict about the service."""
        if self._probe_in_flight:
            self._probe_in_flight = False

    def hold(self, seconds: float, reason: str) -> None:
        """Fail fast for ``seconds`` (the service asked us to wait)."""
        until = self._clock() + seconds
        if self._state != self.OPEN or until > self._open_until:
            self._open_until = until
        self._state = self.OPEN
        self._reason = reason

    def _open(self, seconds: float, reason: str) -> None:
        logger.warning(
            "circuit open for %.1fs after %d failures (%s)", seconds, self._failures, reason
        )
        self._state = self.OPEN
        self._open_until = self._clock() + seconds
        self._reason = reason


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret value (4+ characters) masked."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


class SecretRedactor(logging.Filter):
    """A logging filter that masks secret values in formatted log records.

    Attach it to handlers (``handler.addFilter``): filters on a logger do not
    see records propagated from its children.
    """

    def __init__(self, secrets: Callable[[], Iterable[str]]) -> None:
        super().__init__()
        self._secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        """Mask secrets in the message; never drops the record."""
        secrets = [s for s in self._secrets() if s and len(s) >= 4]
        if not secrets:
            return True
        message = record.getMessage()
        masked = redact(message, secrets)
        if masked != message:
            record.msg = masked
            record.args = None
        if record.exc_text:
            record.exc_text = redact(record.exc_text, secrets)
        return True
