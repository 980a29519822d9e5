"""The team L2: entries in Redis, changes carried between sessions by a Redis Stream.

Needs the optional extra ``scopecache[redis]``; the client is imported when a
store is built, and a missing one raises ``L2MissingExtra`` naming the extra.

Keys: ``scopecache:e:<hex>``, where hex is HMAC-SHA256 (keyed with the
namespace secret) of namespace + key digest, so Redis never holds source
context, endpoints or model names as keys, and someone without the secret
cannot tell which entries belong to which namespace. Each entry has a TTL and
values over ``max_value_bytes`` are not stored. A sorted set counts hits for
``hottest`` (prewarming).

Sync: every put and invalidation is XADDed (approximate MAXLEN) to the
namespace's stream. Each session reads it through its *own consumer group*
with XREADGROUP BLOCK in a background task, so every session sees every
event (a group hands each event to one consumer only, so sharing a group
would starve the others). Pass a stable ``consumer_group`` (e.g. host +
workspace) to have a restarted session resume where its predecessor
stopped; the default is a fresh group per session, destroyed on close.
Events are XACKed after they are applied, events this session wrote are
skipped, each event's ``op_id`` is remembered so a redelivery is applied
once, and pending events of dead consumers in the group are taken over with
XAUTOCLAIM once idle for ``claim_idle_ms``. A malformed event is logged and
acknowledged. If Redis loses the group (a restart without persistence) the
NOGROUP reply makes the reader recreate it.

Degradation: short socket timeouts and no client-side retries, so a dead or
slow Redis turns get/put into quick misses; the reader task keeps trying
with back-off and marks the store up again when Redis answers.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from cache.entry import CachedCompletion
from cache.keys import ScopeKey
from cache.l2 import redis_events
from cache.l2.base import Clock, L2Store, key_to_json, parse_entry
from cache.l2.errors import L2EntryRejected, L2MissingExtra, L2Unavailable
from transport.tasks import stop_tasks

logger = logging.getLogger(__name__)

#: members kept in the hit-count set used by ``hottest``
HOT_SET_MAX = 10_000
#: an entry's lifetime in Redis when none is configured: a week
DEFAULT_TTL_SECONDS = 7 * 24 * 3600


class RedisStore(L2Store):
    """An L2 in Redis, synchronised live between sessions through a stream."""

    kind = "redis"

    def __init__(
        self,
        url: str,
        namespace: str,
        *,
        secret: bytes | None = None,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        max_value_bytes: int = 64 * 1024,
        stream_maxlen: int = 10_000,
        consumer_group: str | None = None,
        consumer_name: str | None = None,
        socket_timeout: float = 0.25,
        block_ms: int = 1000,
        claim_idle_ms: int = 30_000,
        claim_interval: float = 5.0,
        clock: Clock = time.time,
        retry_initial: float = 0.25,
        retry_max: float = 10.0,
    ) -> None:
        try:
            import redis.asyncio as aioredis
            from redis.asyncio.retry import Retry
            from redis.backoff import NoBackoff
        except ImportError as exc:
            raise L2MissingExtra(
                "the Redis L2 needs the redis client: pip install 'scopecache[redis]'"
            ) from exc
        super().__init__(namespace, clock=clock, retry_initial=retry_initial, retry_max=retry_max)
        self._errors: tuple[type[BaseException], ...] = (
            aioredis.RedisError, OSError, asyncio.TimeoutError
        )
        self._response_error: type[Exception] = aioredis.ResponseError
        self._secret = secret if secret else b"scopecache-unkeyed\0" + namespace.encode()
        self.ttl_seconds = ttl_seconds
        self.max_value_bytes = max_value_bytes
        self.stream_maxlen = stream_maxlen
        self.session_id = uuid.uuid4().hex
        self._own_group = consumer_group is None
        self.group = consumer_group or f"scopecache-{self.session_id}"
        self.consumer = (
            consumer_name or f"{socket.gethostname()}-{os.getpid()}-{self.session_id[:8]}"
        )
        self.block_ms = block_ms
        self.claim_idle_ms = claim_idle_ms
        self.claim_interval = claim_interval
        self.stream_key = f"scopecache:s:{self._mac('stream')}"
        self.hot_key = f"scopecache:h:{self._mac('hot')}"
        no_retry: dict[str, Any] = {
            "retry": Retry(NoBackoff(), 0), "socket_connect_timeout": socket_timeout
        }
        self._client: Any = aioredis.Redis.from_url(url, socket_timeout=socket_timeout, **no_retry)
        # The reader blocks for block_ms, so its socket must wait longer than that.
        self._reader: Any = aioredis.Redis.from_url(
            url, socket_timeout=block_ms / 1000 + 2 * socket_timeout, **no_retry
        )
        self._ops = redis_events.OpWindow()
        self._follower: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._size_known = 0
        self._puts = 0

    def _mac(self, label: str) -> str:
        message = f"{self.namespace}\0{label}".encode("utf-8", "surrogatepass")
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def entry_key(self, key: ScopeKey) -> str:
        """The Redis key an entry is stored under (HMAC hex, no source text)."""
        return f"scopecache:e:{self._mac(key.digest())}"

    async def _do(self, work: Any) -> Any:
        """Await a client call, mapping redis/socket errors to ``L2Unavailable``."""
        try:
            return await work
        except self._errors as exc:
            raise L2Unavailable(f"{type(exc).__name__}: {exc}") from exc

    # -- the hooks ------------------------------------------------------------------

    async def _start(self) -> None:
        ready = False
        try:
            # Join the stream before start() returns, so no event after it is missed.
            await self._do(self._ensure_group("$"))
            ready = True
        finally:
            if self._follower is None:  # also when Redis is down: it keeps retrying
                self._follower = asyncio.create_task(
                    self._follow(ready), name="scopecache-l2-stream"
                )

    async def _close(self) -> None:
        if self._background:  # let hit counts in flight land; they take one round trip
            await asyncio.wait(set(self._background), timeout=1.0)
        await stop_tasks(self._follower, *self._background)
        self._follower = None
        if self._own_group and self.state == "up":
            try:  # a per-session group would otherwise linger in Redis forever
                await self._client.xgroup_destroy(self.stream_key, self.group)
            except Exception as exc:
                logger.debug("could not remove consumer group: %s", exc)
        await self._client.aclose()
        await self._reader.aclose()

    async def _get(self, key: ScopeKey) -> CachedCompletion | None:
        name = self.entry_key(key)
        raw = await self._do(self._client.get(name))
        entry = parse_entry(raw) if raw is not None else None
        if entry is None or entry.key != key:
            return None
        # Counting the hit must not delay serving it.
        self._spawn(lambda: self._client.zincrby(self.hot_key, 1, name))
        return entry

    async def _put(self, entry: CachedCompletion) -> None:
        value = entry.to_json()
        if len(value.encode()) > self.max_value_bytes:
            raise L2EntryRejected(f"entry of {len(value)} chars exceeds maxValueBytes")
        name = self.entry_key(entry.key)
        pipe = self._client.pipeline(transaction=False)
        pipe.set(name, value, ex=int(self.ttl_seconds) or None)
        pipe.zadd(self.hot_key, {name: 0}, nx=True)
        fields = redis_events.encode_put(entry, value, self.session_id)
        pipe.xadd(self.stream_key, fields, maxlen=self.stream_maxlen, approximate=True)
        self._puts += 1
        if self._puts % 256 == 0:
            pipe.zremrangebyrank(self.hot_key, 0, -HOT_SET_MAX - 1)
        await self._do(pipe.execute())

    async def _invalidate(self, key: ScopeKey) -> None:
        name = self.entry_key(key)
        pipe = self._client.pipeline(transaction=False)
        pipe.delete(name)
        pipe.zrem(self.hot_key, name)
        fields = redis_events.encode_invalidate(key_to_json(key), self.session_id)
        pipe.xadd(self.stream_key, fields, maxlen=self.stream_maxlen, approximate=True)
        await self._do(pipe.execute())

    async def _hottest(self, limit: int) -> list[CachedCompletion]:
        names = await self._do(self._client.zrevrange(self.hot_key, 0, 2 * limit - 1))
        if not names:
            return []
        values = await self._do(self._client.mget(names))
        gone = [n for n, v in zip(names, values, strict=True) if v is None]
        if gone:  # expired entries leave their counter behind
            self._spawn(lambda: self._client.zrem(self.hot_key, *gone))
        found = [e for e in (parse_entry(v) for v in values if v is not None) if e is not None]
        return found[:limit]

    def _size(self) -> int:
        return self._size_known

    def _spawn(self, work: Callable[[], Awaitable[Any]]) -> None:
        async def quietly() -> None:
            try:
                await work()
            except Exception as exc:
                logger.debug("background Redis call failed: %s", exc)

        task = asyncio.create_task(quietly())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # -- the stream reader ----------------------------------------------------------

    async def _ensure_group(self, start: str) -> None:
        try:
            await self._reader.xgroup_create(self.stream_key, self.group, id=start, mkstream=True)
        except self._response_error as exc:
            if "BUSYGROUP" not in str(exc):
                raise  # the group exists already: resume from where it stopped

    async def _follow(self, group_ready: bool) -> None:
        start = "0" if group_ready else "$"
        next_claim = 0.0
        while True:
            try:
                if not group_ready:
                    await self._ensure_group(start)
                    # Recreated after a loss: read the new stream from its start.
                    group_ready, start = True, "0"
                if time.monotonic() >= next_claim:
                    next_claim = time.monotonic() + self.claim_interval
                    await self._claim_abandoned()
                    self._size_known = int(await self._reader.zcard(self.hot_key))
                reply = await self._reader.xreadgroup(
                    self.group, self.consumer, {self.stream_key: ">"},
                    count=100, block=self.block_ms,
                )
                self._mark_up()
                for _stream, messages in reply or []:
                    await self._apply(messages)
            except asyncio.CancelledError:
                raise
            except self._response_error as exc:
                if "NOGROUP" in str(exc):
                    group_ready = False
                    logger.info("consumer group %s vanished from Redis; recreating it", self.group)
                    continue
                self._mark_down(exc)
                await asyncio.sleep(max(0.0, self._retry_at - time.monotonic()))
            except self._errors as exc:
                self._mark_down(L2Unavailable(f"{type(exc).__name__}: {exc}"))
                await asyncio.sleep(max(0.05, self._retry_at - time.monotonic()))

    async def _claim_abandoned(self) -> None:
        reply = await self._reader.xautoclaim(
            self.stream_key, self.group, self.consumer,
            min_idle_time=self.claim_idle_ms, start_id="0-0", count=100,
        )
        claimed = reply[1] if len(reply) > 1 else []
        if claimed:
            logger.info("took over %d pending stream events from dead consumers", len(claimed))
            await self._apply(claimed)

    async def _apply(self, messages: list[Any]) -> None:
        done: list[Any] = []
        for message_id, fields in messages:
            done.append(message_id)
            try:
                event = redis_events.decode(fields)
            except ValueError as exc:
                logger.warning("skipping malformed L2 stream event %r: %s", message_id, exc)
                continue
            if event.source == self.session_id or not self._ops.first_time(event.op_id):
                continue
            self._publish(event.change)
        if done:
            await self._reader.xack(self.stream_key, self.group, *done)
