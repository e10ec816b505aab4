"""The SSE edge: heartbeats while the source is quiet, the source is closed when the client goes away, an exception
mid-stream becomes an error event followed by done."""

from __future__ import annotations

import json

import pytest

from app.api.sse import sse_stream
from tests.fakes import FakeEventSource

pytestmark = pytest.mark.unit


async def test_heartbeat_while_waiting():
    src = FakeEventSource([0.0, 0.35])
    out = [chunk async for chunk in sse_stream(src.events(), heartbeat_s=0.1)]
    assert out[0].startswith(b"event: token")
    assert b": ping\n\n" in out[1:-2]
    assert out[-1].startswith(b"event: done")


async def test_client_going_away_closes_the_source():
    src = FakeEventSource([0.0] + [0.05] * 100)
    stream = sse_stream(src.events(), heartbeat_s=1.0)
    first = await stream.__anext__()
    assert first.startswith(b"event: token")
    await stream.aclose()  # what the server does when the client disconnects
    assert src.closed
    assert src.produced < 5


async def test_error_mid_stream_becomes_error_then_done():
    src = FakeEventSource([0.0, 0.0, 0.0], fail_at=1)
    out = [chunk async for chunk in sse_stream(src.events(), heartbeat_s=1.0)]
    kinds = [c.split(b"\n", 1)[0] for c in out]
    assert kinds == [b"event: token", b"event: error", b"event: done"]
    assert json.loads(out[1].split(b"data: ", 1)[1]) == {"code": "dependency_unavailable",
                                                         "message": "the model went away"}
