"""Refresh-ahead bearer tokens: fetched at start, renewed in the background.

``RefreshingTokenAuth`` is the ``AuthProvider`` for every kind of
short-lived token. It wraps a ``TokenSource`` (something that can fetch a
fresh token: ``oauth.ClientCredentialsSource``,
``command.CommandTokenSource``). One token with lifetime ``L``,
obtained at ``t0``::

    t0 ............ t0 + L*(refresh_at - jitter*u) ............ t0 + L
    |  header() answers from memory   |  background refresh   |  expiry
                                      |  (the old token is still served
                                      |   until the new one arrives)

* ``start()`` fetches the first token; a failure is logged and retried by
  the background loop (exponential backoff with jitter).
* ``header()`` never fetches while the token is valid. Without one it joins
  a fetch already under way (bounded wait), raises ``AuthError`` at once
  while a failed fetch is backing off (completions pause, the token
  endpoint is not hammered), and fetches only when there is nothing else to
  do (never started, or the machine slept through the expiry).
* One fetch at a time: concurrent callers share it.
* ``on_rejected(headers)``: the service answered 401/403 to the request
  that carried ``headers``. If a newer token has arrived since, retry with
  it; otherwise force one refresh. A token that is rejected right after a
  forced refresh means the credential itself is refused: that counts as a
  failed fetch (backoff), so a misconfiguration cannot loop.

Tokens live in memory only. ``secrets()`` lists the source's secrets and
the recent tokens so the log redactor masks them; no message built here
contains one.

The clock is monotonic by default; when a machine sleeps through an expiry
the first request gets 401, and the rejection path above recovers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from transport.auth.provider import AuthProvider, bearer_token
from transport.auth.source import TokenSource
from transport.errors import AuthError
from transport.options import DEFAULT_REFRESH_AT
from transport.resilience import Backoff
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

#: up to this fraction of the lifetime is taken off the refresh point at random
DEFAULT_JITTER = 0.1
#: refresh point for tokens issued without a stated lifetime
UNKNOWN_LIFETIME = 3600.0
#: a token this close to its expiry (fraction of lifetime, capped) is not handed out
EXPIRY_MARGIN = 0.02
EXPIRY_MARGIN_CAP = 5.0
#: retry delays after a failed fetch: first ~0.5 s, doubling up to 10 s
DEFAULT_RETRY_BASE = 0.5
DEFAULT_RETRY_CAP = 10.0
#: the longest a completion waits for a fetch that is already under way
DEFAULT_WAIT_LIMIT = 5.0
#: a token rejected this soon after a forced refresh means the credential is refused
FRESH_WINDOW = 5.0
#: tokens remembered for redaction
RECENT_TOKENS = 4

Clock = Callable[[], float]


@dataclass
class _HeldToken:
    value: str = field(repr=False)
    obtained: float
    expires: float | None
    refresh_due: float
    #: not handed out this close to ``expires``
    margin: float = 0.0
    #: obtained because the previous token was rejected
    forced: bool = False
    rejected: bool = False


class RefreshingTokenAuth(AuthProvider):
    """Bearer tokens from a ``TokenSource``, prefetched and refreshed ahead of expiry."""

    def __init__(
        self,
        source: TokenSource,
        *,
        refresh_at: float = DEFAULT_REFRESH_AT,
        jitter: float = DEFAULT_JITTER,
        clock: Clock = time.monotonic,
        rng: Callable[[], float] = random.random,
        retry: Backoff | None = None,
        wait_limit: float = DEFAULT_WAIT_LIMIT,
        background: bool = True,
    ) -> None:
        self.source = source
        self._refresh_at = refresh_at
        self._jitter = jitter
        self._clock = clock
        self._rng = rng
        self._retry = retry or Backoff(DEFAULT_RETRY_BASE, DEFAULT_RETRY_CAP, rng=rng)
        self._wait_limit = wait_limit
        self._background = background
        self._token: _HeldToken | None = None
        self._recent: deque[str] = deque(maxlen=RECENT_TOKENS)
        self._fetch: asyncio.Task[_HeldToken] | None = None
        self._loop: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._failures = 0
        self._retry_at = 0.0
        self._last_error = ""
        #: fetch attempts so far, and how many failed
        self.fetches = 0
        self.fetch_failures = 0
        #: times a request had to wait for a fetch (no token, or a forced refresh)
        self.request_waits = 0

    # -- AuthProvider -----------------------------------------------------

    async def start(self) -> None:
        """Fetch the first token, then keep refreshing it in the background."""
        with contextlib.suppress(AuthError):
            await self._fetch_shared(self._fetch_task(), limit=None)
        if self._background and self._loop is None:
            self._loop = asyncio.create_task(self._run(), name="scopecache-token-refresh")

    async def header(self) -> dict[str, str]:
        """``Authorization: Bearer <token>``; see the module docstring for when it waits."""
        held = self._token
        if held is None or not self._usable(held, self._clock()):
            held = await self._obtain()
        return {"Authorization": f"Bearer {held.value}"}

    async def on_rejected(self, rejected: Mapping[str, str] | None = None) -> bool:
        """Force one refresh unless a newer token is already here; True: retry."""
        value = bearer_token(rejected)
        held = self._token
        now = self._clock()
        if held is not None and value is not None and held.value != value:
            return self._usable(held, now)
        if held is not None:
            held.rejected = True
            if held.forced and now - held.obtained < FRESH_WINDOW:
                self._note_failure(AuthError("the service refuses freshly issued tokens"))
                return False
        if self._backing_off(now):
            return False
        self.request_waits += 1
        logger.info("the service refused the access token: one forced refresh, then one retry")
        try:
            await self._fetch_shared(self._fetch_task(forced=True), limit=self._wait_limit)
        except AuthError:
            return False
        return True

    def secrets(self) -> list[str]:
        """The source's secrets and the recent tokens."""
        return [*self.source.secrets(), *self._recent]

    async def aclose(self) -> None:
        """Stop the refresh loop and any fetch, then close the source."""
        await stop_tasks(self._loop, self._fetch)
        self._loop = self._fetch = None
        await self.source.aclose()

    # -- background -------------------------------------------------------

    async def tick(self) -> float:
        """Refresh now if due (or retry after a failure); seconds until the next tick."""
        if self._clock() >= self._due():
            with contextlib.suppress(AuthError):
                await self._fetch_shared(self._fetch_task(), limit=None)
        return max(0.05, self._due() - self._clock())

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            delay = await self.tick()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    def _due(self) -> float:
        if self._failures:
            return self._retry_at
        if self._token is None or self._token.rejected:
            return float("-inf")
        return self._token.refresh_due

    # -- fetching ---------------------------------------------------------

    async def _obtain(self) -> _HeldToken:
        """A usable token when the held one is not: join, pause or fetch."""
        running = self._fetch is not None and not self._fetch.done()
        if not running and self._backing_off(self._clock()):
            wait = self._retry_at - self._clock()
            raise AuthError(f"no access token ({self._last_error}); next attempt in {wait:.1f}s")
        # On the request path: say so, this is what prefetch exists to avoid.
        self.request_waits += 1
        logger.info("a request waits for an access token fetch")
        return await self._fetch_shared(self._fetch_task(), limit=self._wait_limit)

    def _fetch_task(self, *, forced: bool = False) -> asyncio.Task[_HeldToken]:
        """The fetch under way, or a new one (single flight)."""
        if self._fetch is None or self._fetch.done():
            self._fetch = asyncio.ensure_future(self._fetch_once(forced))
            # A failure nobody awaits (the waiter was cancelled) must not warn.
            self._fetch.add_done_callback(lambda t: t.cancelled() or t.exception())
        return self._fetch

    async def _fetch_shared(
        self, task: asyncio.Task[_HeldToken], *, limit: float | None
    ) -> _HeldToken:
        try:
            return await asyncio.wait_for(asyncio.shield(task), limit)
        except TimeoutError:
            raise AuthError(f"{self.source.description} is slow to answer") from None

    async def _fetch_once(self, forced: bool) -> _HeldToken:
        self.fetches += 1
        try:
            issued = await self.source.fetch()
        except AuthError as exc:
            self._note_failure(exc)
            raise
        except Exception as exc:  # a bug in a source must not stop the refresh loop
            logger.debug("token source failed unexpectedly", exc_info=True)
            error = AuthError(f"{self.source.description} failed ({type(exc).__name__})")
            self._note_failure(error)
            raise error from None
        now = self._clock()
        lifetime = issued.lifetime
        fraction = max(0.05, self._refresh_at - self._jitter * self._rng())
        held = _HeldToken(
            value=issued.value,
            obtained=now,
            expires=now + lifetime if lifetime is not None else None,
            refresh_due=now + (lifetime if lifetime is not None else UNKNOWN_LIFETIME) * fraction,
            margin=min(EXPIRY_MARGIN_CAP, EXPIRY_MARGIN * (lifetime or 0.0)),
            forced=forced,
        )
        if self._failures:
            logger.info("access token obtained again after %d failed attempts", self._failures)
        else:
            logger.debug("access token obtained (lifetime %s s)", lifetime)
        self._failures = 0
        self._retry_at = 0.0
        self._token = held
        self._recent.append(held.value)
        self._wake.set()
        return held

    def _note_failure(self, exc: AuthError) -> None:
        self.fetch_failures += 1
        delay = self._retry.delay(self._failures)
        self._failures += 1
        self._retry_at = self._clock() + delay
        self._last_error = str(exc)
        log = logger.warning if self._failures == 1 else logger.debug
        log("no access token from %s: %s (next attempt in %.1fs)",
            self.source.description, exc, delay)
        self._wake.set()

    # -- state ------------------------------------------------------------

    def _backing_off(self, now: float) -> bool:
        return self._failures > 0 and now < self._retry_at

    def _usable(self, held: _HeldToken, now: float) -> bool:
        if held.rejected:
            return False
        return held.expires is None or now < held.expires - held.margin

    def __repr__(self) -> str:
        held = self._token
        state = "no token" if held is None else ("rejected" if held.rejected else "token")
        return (
            f"<RefreshingTokenAuth {self.source.description} {state} "
            f"fetches={self.fetches} failures={self.fetch_failures}>"
        )
