"""Circuit breaker and bounded retries for the LLM call.

Retries happen only before the first piece of text: once text has been streamed to the user, an error is reported,
never retried (a retry would repeat or contradict what was shown).
"""

from __future__ import annotations

import asyncio
import enum
import random
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable

from core.errors import AppError, ErrorCode


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Closed: calls pass; ``failure_threshold`` consecutive failures open it. Open: calls are refused until
    ``reset_timeout_s`` has passed, then it is half-open. Half-open: one probe call passes (others are refused); its
    success closes the breaker, its failure opens it again."""

    def __init__(
        self, *, failure_threshold: int = 3, reset_timeout_s: float = 30.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.failure_threshold = failure_threshold
        self.reset_timeout_s = reset_timeout_s
        self._clock = clock
        self._failures = 0
        self._opened_at = 0.0
        self._state = BreakerState.CLOSED
        self._probe_out = False

    @property
    def state(self) -> BreakerState:
        if self._state is BreakerState.OPEN and self._clock() - self._opened_at >= self.reset_timeout_s:
            self._state = BreakerState.HALF_OPEN
            self._probe_out = False
        return self._state

    def allow(self) -> bool:
        state = self.state
        if state is BreakerState.CLOSED:
            return True
        if state is BreakerState.HALF_OPEN and not self._probe_out:
            self._probe_out = True
            return True
        return False

    def record_success(self) -> None:
        self._failures = 0
        self._state = BreakerState.CLOSED
        self._probe_out = False

    def record_failure(self) -> None:
        self._failures += 1
        if self._state is BreakerState.HALF_OPEN or self._failures >= self.failure_threshold:
            self._state = BreakerState.OPEN
            self._opened_at = self._clock()
            self._probe_out = False


async def guarded_stream(
    make_stream: Callable[[], AsyncIterator[str]],
    breaker: CircuitBreaker,
    *,
    retries: int = 1,
    base_delay_s: float = 0.2,
    rng: random.Random | None = None,
) -> AsyncGenerator[str, None]:
    """Stream through the breaker; retry (with full jitter) only failures before the first piece.

    Raises ``AppError(DEPENDENCY_UNAVAILABLE)`` when the breaker is open or every attempt failed before text."""
    rng = rng or random.Random()
    attempt = 0
    while True:
        if not breaker.allow():
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "LLM circuit breaker is open")
        started = False
        stream = make_stream()
        try:
            async for piece in stream:
                if not started:
                    started = True
                    breaker.record_success()
                yield piece
            if not started:
                breaker.record_success()
            return
        except AppError:
            breaker.record_failure()
            if started or attempt >= retries:
                raise
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        attempt += 1
        await asyncio.sleep(rng.uniform(0, base_delay_s * 2**attempt))
