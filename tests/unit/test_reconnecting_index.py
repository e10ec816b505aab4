"""ReconnectingIndex: a server that is down at start-up is retried at most every ``retry_s``, calls in between fail
fast with INDEX_UNAVAILABLE, and once connected every call goes to the real index."""

from __future__ import annotations

import pytest

from core.errors import AppError, ErrorCode
from core.types import SearchFilter
from retrieval.reconnecting import ReconnectingIndex
from tests.fakes import FakeClock, FakeWrappedIndex

pytestmark = pytest.mark.unit


class FlakyServer:
    """``connect`` refuses the first ``down_for`` attempts."""

    def __init__(self, down_for: int) -> None:
        self.attempts = 0
        self.down_for = down_for

    def connect(self) -> FakeWrappedIndex:
        self.attempts += 1
        if self.attempts <= self.down_for:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, "connection refused")
        return FakeWrappedIndex()


def test_down_at_start_then_retried_no_more_than_every_retry_s():
    server, clock = FlakyServer(down_for=2), FakeClock(100.0)
    idx = ReconnectingIndex(server.connect, name="weaviate", dim=4, retry_s=10, clock=clock)
    assert server.attempts == 1 and not idx.connected
    for _ in range(5):  # within retry_s: fail fast, no new attempt
        with pytest.raises(AppError) as err:
            idx.search("q", SearchFilter(tenant_id="t"), 3)
        assert err.value.code == ErrorCode.INDEX_UNAVAILABLE and "connection refused" in err.value.message
    assert server.attempts == 1
    clock.now += 10
    with pytest.raises(AppError):
        idx.count()
    assert server.attempts == 2
    clock.now += 10
    assert idx.count() == 7 and idx.connected and server.attempts == 3
    assert idx.search("q", SearchFilter(tenant_id="t"), 3) == []
    assert idx.hybrid("q", None, None, 3) == ["hybrid"]  # backend extras pass through
    assert server.attempts == 3


def test_configuration_errors_are_not_retried_but_raised():
    def bad() -> FakeWrappedIndex:
        raise AppError(ErrorCode.CONFIGURATION, "invalid Weaviate connection settings")

    with pytest.raises(AppError) as err:
        ReconnectingIndex(bad, name="weaviate", dim=4)
    assert err.value.code == ErrorCode.CONFIGURATION
