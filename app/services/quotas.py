"""Quotas as token buckets: requests and generated tokens per minute per key or user, and login attempts per minute
per client address.

In-process by default; Redis-backed (shared by every API replica) when ``KBQA_REDIS_URL`` is set. Over quota raises
``AppError(RATE_LIMITED)`` with ``retry_after_s`` (the handler adds a ``Retry-After`` header). If Redis is unreachable
the limiter falls back to the in-process buckets rather than failing requests.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from core.errors import AppError, ErrorCode

log = logging.getLogger(__name__)

_LUA_TAKE = """
local key, rate, cap, cost, now = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local v = redis.call('HMGET', key, 'tokens', 'ts')
local tokens, ts = tonumber(v[1]) or cap, tonumber(v[2]) or now
tokens = math.min(cap, tokens + (now - ts) * rate)
local ok = 0
if tokens >= cost then tokens = tokens - cost; ok = 1 end
redis.call('HSET', key, 'tokens', tokens, 'ts', now)
redis.call('EXPIRE', key, 120)
return {ok, tostring(tokens)}
"""


class TokenBucket:
    def __init__(self, per_minute: int) -> None:
        self.capacity = float(per_minute)
        self.rate = per_minute / 60.0
        self._state: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key: str, cost: float, *, allow_debt: bool = False) -> tuple[bool, float]:
        """Take ``cost``; returns (allowed, seconds until one unit is available again)."""
        now = time.monotonic()
        with self._lock:
            tokens, ts = self._state.get(key, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - ts) * self.rate)
            ok = tokens >= cost
            if ok or allow_debt:
                tokens -= cost
            self._state[key] = (tokens, now)
        return ok, max(0.0, (1 - tokens) / self.rate) if self.rate else 0.0


class QuotaLimiter:
    def __init__(
        self, *, requests_per_minute: int, tokens_per_minute: int, logins_per_minute: int = 0, redis_url: str = ""
    ) -> None:
        self.rpm = requests_per_minute
        self.tpm = tokens_per_minute
        self.lpm = logins_per_minute
        self._requests = TokenBucket(requests_per_minute) if requests_per_minute else None
        self._tokens = TokenBucket(tokens_per_minute) if tokens_per_minute else None
        self._logins = TokenBucket(logins_per_minute) if logins_per_minute else None
        self._redis: Any = None
        if redis_url:
            try:
                import redis

                self._redis = redis.Redis.from_url(redis_url, socket_timeout=0.5, socket_connect_timeout=0.5)
                self._script = self._redis.register_script(_LUA_TAKE)
            except Exception:  # noqa: BLE001
                log.warning("Redis quota store unavailable; using in-process buckets", exc_info=True)
                self._redis = None

    def _take(
        self, bucket: TokenBucket, name: str, key: str, cost: float, allow_debt: bool = False
    ) -> tuple[bool, float]:
        if self._redis is not None:
            try:
                ok, tokens = self._script(
                    keys=[f"kbqa:quota:{name}:{key}"], args=[bucket.rate, bucket.capacity, cost, time.time()]
                )
                tokens = float(tokens)
                return bool(ok), max(0.0, (1 - tokens) / bucket.rate)
            except Exception:  # noqa: BLE001 - Redis down: degrade to local buckets
                log.warning("Redis quota check failed; using in-process buckets")
        return bucket.take(key, cost, allow_debt=allow_debt)

    def _take_one(self, bucket: TokenBucket | None, name: str, key: str, refusal: str) -> None:
        """Take one unit from ``key``'s bucket, or raise RATE_LIMITED with ``refusal`` and the wait."""
        if bucket is None:
            return
        ok, retry = self._take(bucket, name, key, 1)
        if not ok:
            raise AppError(ErrorCode.RATE_LIMITED, refusal, details={"retry_after_s": round(retry, 1)})

    def check_request(self, key_id: str) -> None:
        self._take_one(self._requests, "req", key_id, f"request quota exceeded ({self.rpm} per minute)")

    def check_login(self, client: str) -> None:
        """Count one login attempt from ``client`` (an address); refuse when its bucket is empty."""
        self._take_one(
            self._logins, "login", client, f"too many login attempts from your address ({self.lpm} per minute)"
        )

    def check_tokens(self, key_id: str) -> None:
        """Refuse a new answer while the key's token bucket is empty (spent by earlier answers)."""
        if self._tokens is None:
            return
        ok, retry = self._take(self._tokens, "tok", key_id, 0)
        if not ok or (self._redis is None and self._tokens._state.get(key_id, (1, 0))[0] <= 0):
            raise AppError(
                ErrorCode.RATE_LIMITED,
                f"token quota exceeded ({self.tpm} generated tokens per minute)",
                details={"retry_after_s": round(max(retry, 1.0), 1)},
            )

    def spend_tokens(self, key_id: str, n: int) -> None:
        if self._tokens is not None and n > 0:
            self._take(self._tokens, "tok", key_id, n, allow_debt=True)
