"""/readyz's checks are bounded in time: a backend stuck in its client's retries reads as down within seconds, and
later probes do not pile up threads behind it."""

from __future__ import annotations

import threading
import time

import pytest

from app.api.routes.health import _bounded

pytestmark = pytest.mark.unit


def test_a_stuck_check_is_down_in_time_and_not_started_twice() -> None:
    release = threading.Event()
    calls: list[str] = []

    def stuck() -> None:
        calls.append("stuck")
        release.wait(30)

    def fails() -> None:
        raise ConnectionError("refused")

    checks = {"keyword": stuck, "graph": lambda: 3, "file_store": fails}
    try:
        started = time.monotonic()
        assert _bounded(checks, 0.5, scope=1) == {"keyword": False, "graph": True, "file_store": False}
        assert time.monotonic() - started < 2
        started = time.monotonic()
        assert _bounded(checks, 0.5, scope=1)["keyword"] is False  # still stuck: down at once, not run again
        assert time.monotonic() - started < 0.4 + 0.5 and calls == ["stuck"]
        assert _bounded({"keyword": lambda: 1}, 0.5, scope=2) == {"keyword": True}  # another app is not affected
    finally:
        release.set()
    time.sleep(0.1)
    assert _bounded({"keyword": lambda: 1}, 0.5, scope=1) == {"keyword": True}  # back once the stuck call returned
