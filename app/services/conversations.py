"""Conversations of one key or user, and feedback on their answers."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel

from app.services import review
from core.db import repositories as repo
from core.db.session import Database
from core.principal import Principal


class ConversationSummary(BaseModel):
    id: str
    title: str
    updated_at: dt.datetime


class ConversationList(BaseModel):
    conversations: list[ConversationSummary]


class MessageView(BaseModel):
    id: str
    role: Literal["user", "assistant"]
    content: str
    citations: list[Any]
    meta: dict[str, Any]
    created_at: dt.datetime


class ConversationView(BaseModel):
    id: str
    title: str
    messages: list[MessageView]


class FeedbackCreated(BaseModel):
    id: str


def list_conversations(*, db: Database, principal: Principal) -> ConversationList:
    with db.session() as s:
        convs = repo.list_conversations(session=s, tenant_id=principal.tenant_id, actor_id=principal.id)
        return ConversationList(
            conversations=[ConversationSummary(id=c.id, title=c.title, updated_at=c.updated_at) for c in convs]
        )


def get_conversation(*, db: Database, principal: Principal, conversation_id: str) -> ConversationView:
    """One of the caller's own conversations (anyone else's is not found)."""
    with db.session() as s:
        conv = repo.get_conversation(
            session=s, tenant_id=principal.tenant_id, conversation_id=conversation_id, actor_id=principal.id
        )
        return ConversationView(
            id=conv.id,
            title=conv.title,
            messages=[
                MessageView(
                    id=m.id, role="assistant" if m.role == "assistant" else "user", content=m.content,
                    citations=m.citations or [], meta=m.meta or {}, created_at=m.created_at,
                )
                for m in conv.messages
            ],
        )


def add_feedback(
    *, db: Database, principal: Principal, message_id: str, rating: Literal["up", "down"], comment: str
) -> FeedbackCreated:
    """Thumbs up or down on an answer in one of the caller's own conversations."""
    with db.session() as s:
        fb = repo.create_feedback(
            session=s,
            tenant_id=principal.tenant_id,
            message_id=message_id,
            actor_id=principal.id,
            rating=rating,
            comment=comment,
        )
        # A thumbs-down enters the editors' review queue.
        review.record_feedback(
            session=s, tenant_id=principal.tenant_id, message_id=message_id, rating=rating, comment=comment
        )
        return FeedbackCreated(id=fb.id)
