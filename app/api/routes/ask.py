"""POST /api/v1/ask: a streamed, cited answer (Server-Sent Events)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Depends, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.api.accounting import account_answer
from app.api.auth import Principal, require
from app.api.sse import sse_response
from app.services import analytics, review
from core.db import repositories as repo
from core.db.models import new_id
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["answers"])

HISTORY_MESSAGES = 8


class AskFilters(BaseModel):
    doc_types: list[str] = []
    tags: list[str] = []
    document_ids: list[str] = []


class AskRequest(BaseModel):
    question: str = Field(min_length=1, max_length=4000)
    conversation_id: str | None = Field(default=None, max_length=64)
    top_k: int | None = Field(default=None, ge=1, le=50)
    filters: AskFilters | None = None


def open_turn(
    container: Any, principal: Principal, question: str, conversation_id: str | None
) -> tuple[str, list[dict]]:
    """Create or continue a conversation, store the user's message; return (conversation id, prior history)."""
    with container.db.session() as s:
        if conversation_id:
            conv = repo.get_conversation(
                session=s, tenant_id=principal.tenant_id, conversation_id=conversation_id, actor_id=principal.id
            )
        else:
            conv = repo.create_conversation(
                session=s, tenant_id=principal.tenant_id, actor_id=principal.id, title=question[:120]
            )
        history = [{"role": m.role, "content": m.content} for m in conv.messages][-HISTORY_MESSAGES:]
        repo.add_message(session=s, conversation_id=conv.id, role="user", content=question)
        repo.audit(
            session=s,
            tenant_id=principal.tenant_id,
            actor=principal.actor,
            action="ask",
            target=conv.id,
            detail={"question": question[:500]} if container.settings.api.audit_questions else {},
        )
        return conv.id, history


def close_turn(
    container: Any,
    principal: Principal,
    conversation_id: str,
    message_id: str,
    done: dict[str, Any],
    citations: list[Any],
    started: float,
    *,
    question: str = "",
    sources: list[dict[str, Any]] | None = None,
) -> None:
    """Store the answer with how it ended (outcome, timings, the passages it was given) and account for it; an
    answer that ended not found or partial enters the review queue."""
    meta = {k: done.get(k) for k in ("refused", "degraded", "timings_ms", "outcome", "missing", "unit", "mode")}
    meta["sources"] = review.compact_sources(sources or [])
    with container.db.session() as s:
        msg = repo.add_message(
            session=s,
            conversation_id=conversation_id,
            role="assistant",
            content=done.get("answer", ""),
            message_id=message_id,
            citations=citations,
            meta=meta,
        )
        analytics.record_answer(session=s, tenant_id=principal.tenant_id, message=msg)
        review.record_answer(session=s, tenant_id=principal.tenant_id, message=msg, question=question)
        account_answer(container, principal, done, session=s, latency_ms=(time.perf_counter() - started) * 1000)


async def answer_events(
    container: Any, principal: Principal, body: AskRequest, request_id: str, conversation_id: str, history: list[dict]
) -> AsyncIterator[Any]:
    started = time.perf_counter()
    message_id = new_id()
    f = body.filters or AskFilters()
    flt = principal.search_filter(doc_types=tuple(f.doc_types), tags=tuple(f.tags), document_ids=tuple(f.document_ids))
    citations: list[Any] = []
    sources: list[dict[str, Any]] = []
    async for event in container.answers.run(
        body.question,
        flt=flt,
        history=history,
        request_id=request_id,
        conversation_id=conversation_id,
        message_id=message_id,
        top_k=body.top_k or container.settings.retrieval.top_k,
    ):
        etype = event.type
        data = event.to_dict()
        if etype == "sources":
            sources = data.get("sources", [])
        if etype == "citations":
            citations = data.get("citations", [])
        if etype == "done":
            close_turn(
                container, principal, conversation_id, message_id, data, citations, started,
                question=body.question, sources=sources,
            )
        yield event


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
    return sse_response(
        answer_events(container, principal, body, request_id, conversation_id, history),
        heartbeat_s=container.settings.api.heartbeat_s,
    )
