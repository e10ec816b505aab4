"""POST /api/v1/ask: a streamed, cited answer (Server-Sent Events)."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.api.sse import sse_response
from app.container import Container
from app.services.asking import MAX_QUESTION_CHARS, MAX_TOP_K
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
async def ask(
    body: AskRequest,
    request: Request,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> StreamingResponse:
    service = container.answer_service
    request_id = getattr(request.state, "request_id", None) or uuid.uuid4().hex
    service.check_quota(principal=principal)
    # Database work happens before the stream starts, so a database outage is a plain 503 JSON response.
    turn = await run_in_threadpool(
        service.open_turn, principal=principal, question=body.question, conversation_id=body.conversation_id
    )
    f = body.filters or AskFilters()
    flt = principal.search_filter(doc_types=tuple(f.doc_types), tags=tuple(f.tags), document_ids=tuple(f.document_ids))
    events = service.conversation_events(
        principal=principal, turn=turn, question=body.question, flt=flt, request_id=request_id, top_k=body.top_k
    )
    return sse_response(events, heartbeat_s=container.settings.api.heartbeat_s)
