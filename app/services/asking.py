"""One question answered whole (not streamed): what the MCP tool ``ask_knowledge_base`` returns. The turn goes
through :class:`app.services.answers.AnswerService` like ``POST /api/v1/ask``: stored in a conversation of the
principal, audited, usage recorded, token quota spent."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool

from app.generation.events import Citations, Degraded, Done, Error, Meta, Sources
from app.services.answers import AnswerService
from core.errors import AppError, ErrorCode
from core.principal import Principal
from core.types import SearchFilter

MAX_QUESTION_CHARS = 4000
MAX_TOP_K = 50


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
    service: AnswerService,
    principal: Principal,
    *,
    question: str,
    flt: SearchFilter,
    top_k: int | None = None,
    conversation_id: str | None = None,
    request_id: str,
) -> dict[str, Any]:
    """The whole answer of one turn as one JSON object: answer text, outcome, citations (one per cited passage, with
    title, section and pages), sources, degraded stages and ids. Checks the token quota first; an error inside the
    stream becomes an ``AppError`` with its code."""
    service.check_quota(principal=principal)
    turn = await run_in_threadpool(
        service.open_turn, principal=principal, question=question, conversation_id=conversation_id
    )
    done: Done | None = None
    error: Error | None = None
    message_id = ""
    sources: list[dict[str, Any]] = []
    citations: list[dict[str, Any]] = []
    degraded: list[str] = []
    async for event in service.conversation_events(
        principal=principal, turn=turn, question=question, flt=flt, request_id=request_id, top_k=top_k
    ):
        if isinstance(event, Meta):
            message_id = event.message_id
        elif isinstance(event, Sources):
            sources = event.sources
        elif isinstance(event, Citations):
            citations = event.citations
        elif isinstance(event, Degraded):
            degraded.extend(event.reasons)
        elif isinstance(event, Error):
            error = event
        elif isinstance(event, Done):
            done = event
    if error is not None:
        known = error.code in {c.value for c in ErrorCode}
        raise AppError(ErrorCode(error.code) if known else ErrorCode.INTERNAL, error.message or "answer failed")
    cited: dict[Any, dict[str, Any]] = {}
    for c in citations:
        cited.setdefault(c.get("n"), _place(c))
    return {
        "answer": done.answer if done else "",
        "outcome": done.outcome if done else None,
        "refused": done.refused if done else None,
        "mode": done.mode if done else None,
        "missing": done.missing if done else [],
        "unlinked": done.unlinked if done else [],
        "citations": list(cited.values()),
        "sources": [_place(s) for s in sources],
        "degraded": degraded,
        "conversation_id": turn.conversation_id,
        "message_id": message_id,
        "usage": done.usage if done else {},
    }
