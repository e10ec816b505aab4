"""POST /v1/chat/completions: OpenAI-compatible grounded answers (model ``kbqa``), streaming or not.

The last user message is the question; earlier messages are the conversation history. Citations ride along in a
``kbqa`` extension object (``sources``, ``citations``, ``refused``, ``degraded``, and the answer's ``outcome`` --
answered, partial or not_found --, ``missing``, ``unit`` and ``mode`` as in the ``done`` event), and the ``[n]``
markers stay in the text, so OpenAI SDK clients work unchanged.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field

from app.api.accounting import account_answer
from app.api.auth import Principal, require
from app.api.sse import SSE_HEADERS
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


async def _events(container: Any, principal: Principal, body: ChatCompletionRequest) -> AsyncIterator[Any]:
    msgs = _conversation(body)
    history = [{"role": m.role, "content": m.content or ""} for m in msgs[:-1]]
    async for event in container.answers.run(
        msgs[-1].content or "",
        flt=principal.search_filter(),
        history=history,
        request_id=uuid.uuid4().hex,
        conversation_id=None,
        message_id=None,
        top_k=container.settings.retrieval.top_k,
    ):
        yield event


def _absorb(container: Any, principal: Principal, etype: str, data: dict[str, Any], extra: dict[str, Any]) -> str:
    """Fold one answer event into the ``kbqa`` extension object; returns the text a token event adds."""
    if etype == "token":
        return str(data.get("text", ""))
    if etype in ("sources", "citations"):
        extra[etype] = data.get(etype, [])
    elif etype == "degraded":
        extra["degraded"] = data.get("reasons", [])
    elif etype == "error":
        extra["error"] = data
    elif etype == "done":
        account_answer(container, principal, data)
        extra["refused"] = data.get("refused", False)
        for key in ("outcome", "missing", "unit", "mode"):
            extra[key] = data.get(key)
        extra["usage"] = data.get("usage") or {}
    return ""


@router.post("/v1/chat/completions", summary="OpenAI-compatible grounded chat completion (model 'kbqa')")
async def chat_completions(
    body: ChatCompletionRequest, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> Any:
    container = request.app.state.container
    _conversation(body)
    container.limiter.check_tokens(principal.id)
    cid, created = f"chatcmpl-{uuid.uuid4().hex}", int(time.time())
    if body.stream:

        async def stream() -> AsyncIterator[bytes]:
            yield _chunk(cid, created, {"role": "assistant", "content": ""})
            extra: dict[str, Any] = {}
            try:
                async for ev in _events(container, principal, body):
                    text = _absorb(container, principal, ev.type, ev.to_dict(), extra)
                    if text:
                        yield _chunk(cid, created, {"content": text})
            except AppError as exc:
                extra["error"] = {"code": exc.code.value, "message": exc.message}
            yield _chunk(cid, created, {}, finish="stop", extra=extra)
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)

    text, extra = "", dict[str, Any]()
    async for ev in _events(container, principal, body):
        text += _absorb(container, principal, ev.type, ev.to_dict(), extra)
    if "error" in extra:
        raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, extra["error"].get("message", "answer failed"))
    usage = extra.pop("usage", {})
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
