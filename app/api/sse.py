"""A thin SSE edge: typed events out, heartbeats in between, work cancelled when the client goes away.

Each event is ``event: <type>\\ndata: <json>\\n\\n``; heartbeats are comment lines (``: ping``). An exception escaping
the event source becomes an ``error`` event followed by a final ``done``. Headers turn proxy buffering off.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from fastapi.responses import StreamingResponse

from core.errors import AppError, ErrorCode

log = logging.getLogger(__name__)

RAW = "raw"
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no", "Connection": "keep-alive"}


def format_event(event_type: str, data: Any) -> bytes:
    payload = json.dumps(data, ensure_ascii=False, default=str)
    return f"event: {event_type}\ndata: {payload}\n\n".encode()


async def sse_stream(events: AsyncIterator[Any], *, heartbeat_s: float) -> AsyncIterator[bytes]:
    """Serialise events (objects with ``type`` and ``to_dict()``, or ``(type, dict)`` tuples; ``(RAW, bytes)`` goes
    out unchanged)."""
    iterator = events.__aiter__()
    pending: asyncio.Task[Any] | None = None
    saw_done = False
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=heartbeat_s)
            if not done:
                yield b": ping\n\n"
                continue
            task, pending = pending, None
            try:
                event = task.result()
            except StopAsyncIteration:
                break
            etype, data = event if isinstance(event, tuple) else (event.type, event.to_dict())
            if etype == RAW:  # a frame already in its wire format (the OpenAI-compatible chunks)
                yield data
                continue
            saw_done = saw_done or etype == "done"
            yield format_event(etype, data)
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # noqa: BLE001 - mid-stream errors become an event, then done
        err = exc if isinstance(exc, AppError) else AppError(ErrorCode.INTERNAL, "internal error while answering")
        if not isinstance(exc, AppError):
            log.exception("error in event stream")
        yield format_event("error", {"code": err.code.value, "message": err.message})
        if not saw_done:
            yield format_event("done", {"error": True})
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(BaseException):
                await aclose()


def sse_response(events: AsyncIterator[Any], *, heartbeat_s: float) -> StreamingResponse:
    return StreamingResponse(
        sse_stream(events, heartbeat_s=heartbeat_s), media_type="text/event-stream", headers=SSE_HEADERS
    )
