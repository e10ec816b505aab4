"""A request-body cap per route, enforced before the body is parsed and before authentication.

A declared ``Content-Length`` over the route's limit is answered 413 at once, without reading a byte; a body without
one (chunked) is counted as it arrives and refused as soon as it passes the limit. Uploads get a large limit, the
OpenAI-compatible chat route a medium one (long histories), every other route a small one (JSON).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.exceptions import HTTPException

from core.errors import AppError, ErrorCode

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


def _too_large(limit: int) -> AppError:
    return AppError(
        ErrorCode.PAYLOAD_TOO_LARGE,
        f"the request body is larger than this route's limit of {limit} bytes",
        details={"limit_bytes": limit},
    )


class BodyTooLarge(HTTPException):
    """Raised from ``receive`` mid-body; FastAPI passes HTTPExceptions from body parsing through unchanged, and the
    app's handler answers it as 413 JSON."""

    def __init__(self, limit: int) -> None:
        super().__init__(status_code=413, detail=_too_large(limit).message)


class BodyLimitMiddleware:
    def __init__(self, app: ASGIApp, *, limit_for: Callable[[str, str], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["method"], scope["path"])
        declared = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    declared = -1
        if declared is not None and (declared < 0 or declared > limit):
            err = _too_large(limit) if declared > limit else AppError(ErrorCode.VALIDATION, "invalid Content-Length")
            body = json.dumps(err.to_dict()).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": err.http_status,
                    # The body was not read: the connection is not reusable.
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        (b"connection", b"close"),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        seen = 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit)
            return message

        await self.app(scope, limited_receive, send)


def route_limits(*, json_bytes: int, chat_bytes: int, upload_bytes: int) -> Callable[[str, str], int]:
    def limit_for(method: str, path: str) -> int:
        if method == "POST" and path.rstrip("/") == "/api/v1/documents":
            return upload_bytes
        if method == "POST" and path.rstrip("/") == "/v1/chat/completions":
            return chat_bytes
        return json_bytes

    return limit_for
