"""POST /v1/chat/completions: OpenAI-compatible grounded answers (model ``kbqa``), streaming or not.

The last user message is the question; earlier messages are the conversation history. Citations ride along in a
``kbqa`` extension object (``sources``, ``citations``, ``refused``, ``degraded``, and the answer's ``outcome`` --
answered, partial or not_found --, ``missing``, ``unlinked``, ``unit`` and ``mode`` as in the ``done`` event), and
the ``[n]`` markers stay in the text, so OpenAI SDK clients work unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.api.sse import RAW, sse_response
from app.container import Container
from app.generation.events import Citations, Degraded, Done, Error, Event, Sources, Token
from app.services.answers import AnswerService
from core.errors import AppError, ErrorCode
from core.types import Role

router = APIRouter(tags=["openai"])

MODEL_NAME = "kbqa"


class ChatMessage(BaseModel):
    role: Literal["system", "user", "assistant", "tool", "developer"]
    content: str | None = Field(default="", max_length=20000)


class ChatCompletionRequest(BaseModel):
    model: str = MODEL_NAME
    messages: list[ChatMessage] = Field(min_length=1, max_length=100)
    stream: bool = False
    max_tokens: int | None = Field(default=None, ge=1, le=8192)
    temperature: float | None = Field(default=None, ge=0, le=2)
    user: str | None = None


def _chunk(
    cid: str, created: int, delta: dict[str, Any], finish: str | None = None, extra: dict[str, Any] | None = None
) -> bytes:
    body: dict[str, Any] = {
        "id": cid,
        "object": "chat.completion.chunk",
        "created": created,
        "model": MODEL_NAME,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if extra:
        body["kbqa"] = extra
    return f"data: {json.dumps(body, ensure_ascii=False, default=str)}\n\n".encode()


def _conversation(body: ChatCompletionRequest) -> list[ChatMessage]:
    """The user and assistant messages, ending with the question; 422 before any answer starts (streamed or not)."""
    msgs = [m for m in body.messages if m.role in ("user", "assistant") and m.content]
    if not msgs or msgs[-1].role != "user":
        raise AppError(ErrorCode.VALIDATION, "the last message must be a non-empty user message")
    return msgs


class _Folded:
    """The ``kbqa`` extension object, folded from the answer's typed events."""

    def __init__(self) -> None:
        self.extra: dict[str, Any] = {}
        self.done: Done | None = None

    def absorb(self, event: Event) -> str:
        """Fold one event in; returns the text a token event adds."""
        if isinstance(event, Token):
            return event.text
        if isinstance(event, Sources):
            self.extra["sources"] = event.sources
        elif isinstance(event, Citations):
            self.extra["citations"] = event.citations
        elif isinstance(event, Degraded):
            self.extra["degraded"] = event.reasons
        elif isinstance(event, Error):
            self.extra["error"] = {"code": event.code, "message": event.message}
        elif isinstance(event, Done):
            self.done = event
            self.extra["refused"] = event.refused
            self.extra.update(outcome=event.outcome, missing=event.missing, unlinked=event.unlinked, unit=event.unit,
                              mode=event.mode)
        return ""


def _events(service: AnswerService, principal: Principal, body: ChatCompletionRequest) -> AsyncIterator[Event]:
    msgs = _conversation(body)
    history = [{"role": m.role, "content": m.content or ""} for m in msgs[:-1]]
    return service.events(
        principal=principal, question=msgs[-1].content or "", flt=principal.search_filter(), history=history,
        request_id=uuid.uuid4().hex,
    )


async def _chunks(
    service: AnswerService, principal: Principal, body: ChatCompletionRequest, cid: str, created: int
) -> AsyncIterator[tuple[str, bytes]]:
    """Streamed completion chunks, as pre-encoded frames for :func:`app.api.sse.sse_stream` (heartbeats between)."""
    yield RAW, _chunk(cid, created, {"role": "assistant", "content": ""})
    folded = _Folded()
    try:
        async for ev in _events(service, principal, body):
            text = folded.absorb(ev)
            if isinstance(ev, Done):
                await run_in_threadpool(service.account, principal=principal, done=ev)
            if text:
                yield RAW, _chunk(cid, created, {"content": text})
    except AppError as exc:
        folded.extra["error"] = {"code": exc.code.value, "message": exc.message}
    yield RAW, _chunk(cid, created, {}, finish="stop", extra=folded.extra)
    yield RAW, b"data: [DONE]\n\n"


@router.post("/v1/chat/completions", summary="OpenAI-compatible grounded chat completion (model 'kbqa')")
async def chat_completions(
    body: ChatCompletionRequest,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> Any:
    service = container.answer_service
    _conversation(body)
    service.check_quota(principal=principal)
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if body.stream:
        chunks = _chunks(service, principal, body, cid, created)
        return sse_response(chunks, heartbeat_s=container.settings.api.heartbeat_s)

    text, folded = "", _Folded()
    async for ev in _events(service, principal, body):
        text += folded.absorb(ev)
        if isinstance(ev, Done):
            await run_in_threadpool(service.account, principal=principal, done=ev)
    extra = folded.extra
    if "error" in extra:
        raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, extra["error"].get("message", "answer failed"))
    usage = folded.done.usage if folded.done else {}
    pt, ct = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    return {
        "id": cid,
        "object": "chat.completion",
        "created": created,
        "model": MODEL_NAME,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        "kbqa": extra,
    }


@router.get("/v1/models", summary="OpenAI-compatible model list")
def models(principal: Principal = Depends(require(Role.AGENT))) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "kbqa"}]}
