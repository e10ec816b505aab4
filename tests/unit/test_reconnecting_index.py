"""ReconnectingIndex: a server that is down at start-up is retried at most every ``retry_s``, calls in between fail
fast with INDEX_UNAVAILABLE, and once connected every call goes to the real index."""

from __future__ import annotations

import pytest

from core.errors import AppError, ErrorCode
from core.types import SearchFilter
from retrieval.reconnecting import ReconnectingIndex

pytestmark = pytest.mark.unit


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class FakeIndex:
    name = "fake"

    def __init__(self) -> None:
        self.searched: list[str] = []

    def search(self, query, flt, k):  # noqa: ANN001, ANN201
        self.searched.append(query)
        return []

    def count(self, tenant_id=None):  # noqa: ANN001, ANN201
        return 7

    def hybrid(self, query, vector, flt, k):  # noqa: ANN001, ANN201
        return ["hybrid"]


class FlakyServer:
    """``connect`` refuses the first ``down_for`` attempts."""

    def __init__(self, down_for: int) -> None:
        self.attempts = 0
        self.down_for = down_for

    def connect(self) -> FakeIndex:
        self.attempts += 1
        if self.attempts <= self.down_for:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, "connection refused")
        return FakeIndex()


def test_down_at_start_then_retried_no_more_than_every_retry_s():
    server, clock = FlakyServer(down_for=2), FakeClock()
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
    def bad() -> FakeIndex:
        raise AppError(ErrorCode.CONFIGURATION, "invalid Weaviate connection settings")

    with pytest.raises(AppError) as err:
        ReconnectingIndex(bad, name="weaviate", dim=4)
    assert err.value.code == ErrorCode.CONFIGURATION
