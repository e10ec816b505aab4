"""Conversations and feedback."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from app.api.auth import Principal, require
from app.services import review
from core.db import repositories as repo
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["conversations"])


@router.get("/conversations", summary="Your recent conversations")
def list_conversations(request: Request, principal: Principal = Depends(require(Role.AGENT))) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        convs = repo.list_conversations(session=s, tenant_id=principal.tenant_id, actor_id=principal.id)
        return {"conversations": [{"id": c.id, "title": c.title, "updated_at": c.updated_at} for c in convs]}


@router.get("/conversations/{conversation_id}", summary="A conversation with its messages")
def get_conversation(
    conversation_id: str, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> dict[str, Any]:
    with request.app.state.container.db.session() as s:
        conv = repo.get_conversation(
            session=s, tenant_id=principal.tenant_id, conversation_id=conversation_id, actor_id=principal.id
        )
        return {
            "id": conv.id,
            "title": conv.title,
            "messages": [
                {
                    "id": m.id,
                    "role": m.role,
                    "content": m.content,
                    "citations": m.citations,
                    "meta": m.meta,
                    "created_at": m.created_at,
                }
                for m in conv.messages
            ],
        }


class FeedbackRequest(BaseModel):
    message_id: str = Field(min_length=1, max_length=64)
    rating: Literal["up", "down"]
    comment: str = Field(default="", max_length=4000)


@router.post("/feedback", status_code=201, summary="Thumbs up or down on an answer")
def feedback(
    body: FeedbackRequest, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> JSONResponse:
    with request.app.state.container.db.session() as s:
        fb = repo.create_feedback(
            session=s,
            tenant_id=principal.tenant_id,
            message_id=body.message_id,
            actor_id=principal.id,
            rating=body.rating,
            comment=body.comment,
        )
        review.record_feedback(
            session=s, tenant_id=principal.tenant_id, message_id=body.message_id, rating=body.rating,
            comment=body.comment,
        )
        return JSONResponse({"id": fb.id}, status_code=201)
