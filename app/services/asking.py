"""One question, one answer turn: what ``POST /api/v1/ask`` streams and the MCP tool ``ask_knowledge_base`` returns
whole. Both store the question and the answer in a conversation of the principal, audit the question, record usage
and spend the principal's token quota the same way."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool

from app.api.accounting import account_answer
from app.api.auth import Principal
from core.db import repositories as repo
from core.db.models import new_id
from core.errors import AppError, ErrorCode
from core.types import SearchFilter

HISTORY_MESSAGES = 8
MAX_QUESTION_CHARS = 4000
MAX_TOP_K = 50


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
) -> None:
    with container.db.session() as s:
        repo.add_message(
            session=s,
            conversation_id=conversation_id,
            role="assistant",
            content=done.get("answer", ""),
            message_id=message_id,
            citations=citations,
            meta={k: done.get(k) for k in ("refused", "degraded", "timings_ms")},
        )
        account_answer(container, principal, done, session=s, latency_ms=(time.perf_counter() - started) * 1000)


async def answer_events(
    container: Any,
    principal: Principal,
    *,
    question: str,
    flt: SearchFilter,
    top_k: int | None,
    request_id: str,
    conversation_id: str,
    history: list[dict],
) -> AsyncIterator[Any]:
    """The answer pipeline's events for one turn opened by ``open_turn``; the turn is closed (answer stored, usage
    and token quota accounted) when ``done`` passes."""
    started = time.perf_counter()
    message_id = new_id()
    citations: list[Any] = []
    async for event in container.answers.run(
        question,
        flt=flt,
        history=history,
        request_id=request_id,
        conversation_id=conversation_id,
        message_id=message_id,
        top_k=top_k or container.settings.retrieval.top_k,
    ):
        data = event.to_dict()
        if event.type == "citations":
            citations = data.get("citations", [])
        if event.type == "done":
            await run_in_threadpool(
                close_turn, container, principal, conversation_id, message_id, data, citations, started
            )
        yield event


def _place(item: dict[str, Any]) -> dict[str, Any]:
    """Where a cited or retrieved passage comes from: chunk and document ids, title, section, pages."""
    section = item.get("section")
    if section is None:
        section = " > ".join(item.get("section_path") or [])
    return {
        "n": item.get("n"),
        "chunk_id": item.get("chunk_id"),
        "document_id": item.get("document_id"),
        "title": item.get("title"),
        "section": section,
        "page_start": item.get("page_start"),
        "page_end": item.get("page_end"),
    }


async def answer_whole(
    container: Any,
    principal: Principal,
    *,
    question: str,
    flt: SearchFilter,
    top_k: int | None = None,
    conversation_id: str | None = None,
    request_id: str,
) -> dict[str, Any]:
    """The whole answer of one turn as one JSON object (for callers that do not stream): answer text, outcome,
    citations (one per cited passage, with title, section and pages), sources, degraded stages and ids. Checks the
    token quota first; an error inside the stream becomes an ``AppError`` with its code."""
    container.limiter.check_tokens(principal.id)
    conv_id, history = await run_in_threadpool(open_turn, container, principal, question, conversation_id)
    events: dict[str, dict[str, Any]] = {}
    degraded: list[str] = []
    async for event in answer_events(
        container,
        principal,
        question=question,
        flt=flt,
        top_k=top_k,
        request_id=request_id,
        conversation_id=conv_id,
        history=history,
    ):
        data = event.to_dict()
        if event.type == "degraded":
            degraded.extend(data.get("reasons", []))
        elif event.type != "token":
            events[event.type] = data
    if "error" in events:
        err = events["error"]
        code = err.get("code")
        known = code in {c.value for c in ErrorCode}
        raise AppError(ErrorCode(code) if known else ErrorCode.INTERNAL, str(err.get("message", "answer failed")))
    done = events.get("done", {})
    cited: dict[Any, dict[str, Any]] = {}
    for c in events.get("citations", {}).get("citations", []):
        cited.setdefault(c.get("n"), _place(c))
    return {
        "answer": done.get("answer", ""),
        "outcome": done.get("outcome"),
        "refused": done.get("refused"),
        "mode": done.get("mode"),
        "missing": done.get("missing", []),
        "citations": list(cited.values()),
        "sources": [_place(s) for s in events.get("sources", {}).get("sources", [])],
        "degraded": degraded,
        "conversation_id": conv_id,
        "message_id": events.get("meta", {}).get("message_id"),
        "usage": done.get("usage", {}),
    }
