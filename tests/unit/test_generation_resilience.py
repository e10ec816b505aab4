"""Circuit breaker states and retry-before-first-token only."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator

import pytest

from app.generation.resilience import BreakerState, CircuitBreaker, guarded_stream
from core.errors import AppError, ErrorCode
from tests.fakes import FakeClock

pytestmark = pytest.mark.unit


def test_breaker_opens_half_opens_and_probes() -> None:
    clock = FakeClock()
    b = CircuitBreaker(failure_threshold=2, reset_timeout_s=10, clock=clock)
    b.record_failure()
    assert b.state is BreakerState.CLOSED
    b.record_failure()
    assert b.state is BreakerState.OPEN and not b.allow()
    clock.now = 10
    assert b.state is BreakerState.HALF_OPEN
    assert b.allow() and not b.allow()  # one probe only
    b.record_failure()
    assert b.state is BreakerState.OPEN
    clock.now = 20
    assert b.allow()
    b.record_success()
    assert b.state is BreakerState.CLOSED and b.allow()


def flaky(fail_times: int, fail_after_first: bool = False):  # type: ignore[no-untyped-def]
    calls = {"n": 0}

    async def gen() -> AsyncIterator[str]:
        calls["n"] += 1
        if calls["n"] <= fail_times:
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "down")
        yield "a"
        if fail_after_first:
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "broke")
        yield "b"

    return gen, calls


@pytest.mark.asyncio
async def test_retry_before_first_token() -> None:
    gen, calls = flaky(1)
    out = [p async for p in guarded_stream(gen, CircuitBreaker(), retries=1, base_delay_s=0, rng=random.Random(0))]
    assert out == ["a", "b"] and calls["n"] == 2


@pytest.mark.asyncio
async def test_no_retry_after_first_token() -> None:
    gen, calls = flaky(0, fail_after_first=True)
    out: list[str] = []
    with pytest.raises(AppError):
        async for p in guarded_stream(gen, CircuitBreaker(), retries=3, base_delay_s=0):
            out.append(p)
    assert out == ["a"] and calls["n"] == 1


@pytest.mark.asyncio
async def test_open_breaker_refuses_without_calling() -> None:
    gen, calls = flaky(5)
    b = CircuitBreaker(failure_threshold=2)
    with pytest.raises(AppError):
        _ = [p async for p in guarded_stream(gen, b, retries=1, base_delay_s=0)]
    assert b.state is BreakerState.OPEN and calls["n"] == 2
    with pytest.raises(AppError, match="breaker is open"):
        _ = [p async for p in guarded_stream(gen, b, retries=1, base_delay_s=0)]
    assert calls["n"] == 2
