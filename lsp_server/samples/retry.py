"""Retrying HTTP GETs with exponential backoff, jitter and a deadline."""

from __future__ import annotations

import logging
import random
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

logger = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Backoff:
    """How long to wait between attempts."""

    base: float = 0.2
    factor: float = 2.0
    cap: float = 10.0
    jitter: float = 0.1

    def delay(self, attempt: int, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt``."""
        raw = min(self.cap, self.base * self.factor ** attempt)
        spread = raw * self.jitter
        return max(0.0, raw + rng.uniform(-spread, spread))


class RetryError(Exception):
    """Every attempt failed; the last error is attached."""

    def __init__(self, url: str, attempts: int, last: Exception | None) -> None:
        super().__init__(f"{url}: giving up after {attempts} attempts ({last})")
        self.url = url
        self.attempts = attempts
        self.last = last


def retry_after_seconds(value: str | None) -> float | None:
    """Parse a ``Retry-After`` header given in seconds."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


class RetryingFetcher:
    """Fetch URLs, retrying transient failures until a deadline."""

    def __init__(
        self,
        backoff: Backoff | None = None,
        max_attempts: int = 5,
        deadline: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        seed: int | None = None,
    ) -> None:
        self.backoff = backoff or Backoff()
        self.max_attempts = max_attempts
        self.deadline = deadline
        self.sleep = sleep
        self.clock = clock
        self.rng = random.Random(seed)
        self.attempts_made = 0

    def fetch(self, url: str, timeout: float = 5.0) -> bytes:
        """GET ``url``, retrying transient failures."""
        started = self.clock()
        last: Exception | None = None
        for attempt in range(self.max_attempts):
            self.attempts_made += 1
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    return bytes(response.read())
            except urllib.error.HTTPError as exc:
                last = exc
                if exc.code not in RETRY_STATUSES:
                    raise
                wait = retry_after_seconds(exc.headers.get("Retry-After"))
            except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
                last = exc
                wait = None
            if wait is None:
                wait = self.backoff.delay(attempt, self.rng)
            elapsed = self.clock() - started
            if elapsed + wait > self.deadline:
                logger.warning("deadline reached for %s after %d attempts", url, attempt + 1)
                break
            logger.info("retrying %s in %.2fs (attempt %d)", url, wait, attempt + 1)
            self.sleep(wait)
        raise RetryError(url, self.attempts_made, last)


def fetch_all(fetcher: RetryingFetcher, urls: list[str]) -> dict[str, bytes | Exception]:
    """Fetch every URL; failures are returned, not raised."""
    results: dict[str, bytes | Exception] = {}
    for url in urls:
        try:
            results[url] = fetcher.fetch(url)
        except (RetryError, urllib.error.HTTPError) as exc:
            results[url] = exc
    return results
