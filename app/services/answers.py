"""Answering for the edges (the SSE route, the OpenAI-compatible route, the CLI): a conversation turn is opened
(history read, question stored, audited), the answer pipeline streams typed events, and when ``done`` arrives the
answer is stored with its outcome and accounted (usage, quota, metrics)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from app.generation.events import Citations, Done, Event, Sources
from app.generation.pipeline import AnswerPipeline
from app.services import analytics, review
from app.services.accounting import account_answer
from app.services.metrics import Metrics
from app.services.quotas import QuotaLimiter
from core.db import repositories as repo
from core.db.models import new_id
from core.db.session import Database
from core.principal import Principal
from core.settings import Settings
from core.types import SearchFilter

HISTORY_MESSAGES = 8
#: ``done`` fields kept with the stored answer (the review queue, analytics and the conversation view read them).
STORED_DONE_FIELDS = ("refused", "degraded", "timings_ms", "outcome", "missing", "unlinked", "unit", "mode")


def _turn(message: Any) -> dict[str, Any]:
    """A stored message as a history turn; an answer keeps the section it came from (``unit``), which a follow-up
    question's answer prefers (:func:`app.generation.units.conversation_context`)."""
    turn: dict[str, Any] = {"role": message.role, "content": message.content}
    unit = (message.meta or {}).get("unit") if message.role == "assistant" else None
    if unit:
        turn["unit"] = {k: unit.get(k) for k in ("document_id", "label", "chunk_ids")}
    return turn


@dataclass(frozen=True)
class Turn:
    conversation_id: str
    history: list[dict[str, Any]]


@dataclass
class AnswerService:
    """One per process (built by the container)."""

    settings: Settings
    db: Database
    pipeline: AnswerPipeline
    metrics: Metrics
    limiter: QuotaLimiter

    def check_quota(self, *, principal: Principal) -> None:
        """Refuse (429) before any work when the principal's token budget for this minute is spent."""
        self.limiter.check_tokens(principal.id)

    def open_turn(self, *, principal: Principal, question: str, conversation_id: str | None) -> Turn:
        """Create or continue a conversation and store the user's message; blocking (call it off the event loop)."""
        with self.db.session() as s:
            if conversation_id:
                conv = repo.get_conversation(
                    session=s, tenant_id=principal.tenant_id, conversation_id=conversation_id, actor_id=principal.id
                )
            else:
                conv = repo.create_conversation(
                    session=s, tenant_id=principal.tenant_id, actor_id=principal.id, title=question[:120]
                )
            history = [_turn(m) for m in conv.messages][-HISTORY_MESSAGES:]
            repo.add_message(session=s, conversation_id=conv.id, role="user", content=question)
            repo.audit(
                session=s,
                tenant_id=principal.tenant_id,
                actor=principal.actor,
                action="ask",
                target=conv.id,
                detail={"question": question[:500]} if self.settings.api.audit_questions else {},
            )
            return Turn(conv.id, history)

    def close_turn(
        self,
        *,
        principal: Principal,
        conversation_id: str,
        message_id: str,
        done: Done,
        citations: list[Any],
        latency_ms: float,
        question: str = "",
        sources: list[dict[str, Any]] | None = None,
    ) -> None:
        """Store the answer with how it ended (outcome, timings, the passages it was given) and account it, in one
        transaction; an answer that ended not found or partial enters the review queue. Blocking."""
        meta: dict[str, Any] = {k: getattr(done, k) for k in STORED_DONE_FIELDS}
        meta["sources"] = review.compact_sources(sources or [])
        with self.db.session() as s:
            msg = repo.add_message(
                session=s,
                conversation_id=conversation_id,
                role="assistant",
                content=done.answer,
                message_id=message_id,
                citations=citations,
                meta=meta,
            )
            analytics.record_answer(session=s, tenant_id=principal.tenant_id, message=msg)
            review.record_answer(session=s, tenant_id=principal.tenant_id, message=msg, question=question)
            account_answer(
                db=self.db, metrics=self.metrics, limiter=self.limiter, principal=principal, done=done, session=s,
                latency_ms=latency_ms,
            )

    def account(self, *, principal: Principal, done: Done) -> None:
        """Account an answer that is not stored in a conversation (the OpenAI-compatible route); blocking."""
        account_answer(db=self.db, metrics=self.metrics, limiter=self.limiter, principal=principal, done=done)

    def events(
        self,
        *,
        principal: Principal,
        question: str,
        flt: SearchFilter,
        history: list[dict[str, Any]],
        request_id: str,
        conversation_id: str | None = None,
        message_id: str | None = None,
        top_k: int | None = None,
    ) -> AsyncIterator[Event]:
        """The answer's typed events, straight from the pipeline (nothing stored)."""
        return self.pipeline.run(
            question,
            flt=flt,
            history=history,
            request_id=request_id,
            conversation_id=conversation_id,
            message_id=message_id,
            top_k=top_k or self.settings.retrieval.top_k,
        )

    async def conversation_events(
        self, *, principal: Principal, turn: Turn, question: str, flt: SearchFilter, request_id: str,
        top_k: int | None = None,
    ) -> AsyncIterator[Event]:
        """The answer's events within a conversation turn; the answer is stored and accounted when ``done`` comes."""
        started = time.perf_counter()
        message_id = new_id()
        citations: list[Any] = []
        sources: list[dict[str, Any]] = []
        async for event in self.pipeline.run(
            question,
            flt=flt,
            history=turn.history,
            request_id=request_id,
            conversation_id=turn.conversation_id,
            message_id=message_id,
            top_k=top_k or self.settings.retrieval.top_k,
        ):
            if isinstance(event, Sources):
                sources = event.sources
            elif isinstance(event, Citations):
                citations = event.citations
            elif isinstance(event, Done):
                await asyncio.to_thread(
                    self.close_turn, principal=principal, conversation_id=turn.conversation_id,
                    message_id=message_id, done=event, citations=citations,
                    latency_ms=(time.perf_counter() - started) * 1000, question=question, sources=sources,
                )
            yield event
