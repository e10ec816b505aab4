"""POST /api/v1/ask: a streamed, cited answer (Server-Sent Events)."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.sse import sse_response
from app.services.asking import MAX_QUESTION_CHARS, MAX_TOP_K, answer_events, open_turn
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["answers"])


class AskFilters(BaseModel):
    doc_types: list[str] = []
    tags: list[str] = []
    document_ids: list[str] = []


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    conversation_id: str | None = Field(default=None, max_length=64)
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    filters: AskFilters | None = None


@router.post(
    "/ask",
    summary="Ask a question; the answer streams as Server-Sent Events",
    response_description="text/event-stream: meta, sources, token*, citations, degraded?, done | error",
)
async def ask(body: AskRequest, request: Request, principal: Principal = Depends(require(Role.AGENT))) -> Any:
    container = request.app.state.container
    request_id = getattr(request.state, "request_id", None) or uuid.uuid4().hex
    container.limiter.check_tokens(principal.id)
    # Database work happens before the stream starts, so a database outage is a plain 503 JSON response.
    conversation_id, history = await run_in_threadpool(
        open_turn, container, principal, body.question, body.conversation_id
    )
    f = body.filters or AskFilters()
    flt = principal.search_filter(doc_types=tuple(f.doc_types), tags=tuple(f.tags), document_ids=tuple(f.document_ids))
    return sse_response(
        answer_events(
            container,
            principal,
            question=body.question,
            flt=flt,
            top_k=body.top_k,
            request_id=request_id,
            conversation_id=conversation_id,
            history=history,
        ),
        heartbeat_s=container.settings.api.heartbeat_s,
    )
