"""Conversations and feedback."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import conversations
from app.services.conversations import ConversationList, ConversationView, FeedbackCreated
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["conversations"])


@router.get("/conversations", summary="Your recent conversations", response_model=ConversationList)
def list_conversations(
    principal: Principal = Depends(require(Role.AGENT)), container: Container = Depends(get_container)
) -> ConversationList:
    return conversations.list_conversations(db=container.db, principal=principal)


@router.get(
    "/conversations/{conversation_id}", summary="A conversation with its messages", response_model=ConversationView
)
def get_conversation(
    conversation_id: str,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> ConversationView:
    return conversations.get_conversation(db=container.db, principal=principal, conversation_id=conversation_id)


class FeedbackRequest(BaseModel):
    message_id: str = Field(min_length=1, max_length=64)
    rating: Literal["up", "down"]
    comment: str = Field(default="", max_length=4000)


@router.post("/feedback", status_code=201, summary="Thumbs up or down on an answer", response_model=FeedbackCreated)
def feedback(
    body: FeedbackRequest,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> FeedbackCreated:
    return conversations.add_feedback(
        db=container.db, principal=principal, message_id=body.message_id, rating=body.rating, comment=body.comment
    )
