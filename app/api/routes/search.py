"""GET /api/v1/search (ranked chunks with per-retriever scores), GET /api/v1/chunks/{id} (a cited passage) and
GET /api/v1/chunks/{id}/section (the section around it, to show a citation in context)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from app.api.auth import Principal, require
from app.services import originals
from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Role

router = APIRouter(prefix="/api/v1", tags=["search"])


def chunk_json(c: ChunkRecord) -> dict[str, Any]:
    return {
        "chunk_id": c.id,
        "document_id": c.document_id,
        "document_version": c.document_version,
        "title": c.title,
        "section_path": list(c.section_path),
        "page_start": c.page_start,
        "page_end": c.page_end,
        "text": c.text,
        "doc_type": c.doc_type,
        "element_types": list(c.element_types),
        "chunker_version": c.chunker_version,
    }


@router.get("/search", summary="Hybrid search: ranked chunks with scores per retriever")
async def search(
    request: Request,
    q: str = Query(min_length=1, max_length=2000),
    top_k: int = Query(default=10, ge=1, le=100),
    doc_type: list[str] = Query(default=[]),
    tag: list[str] = Query(default=[]),
    principal: Principal = Depends(require(Role.AGENT)),
) -> dict[str, Any]:
    container = request.app.state.container
    flt = principal.search_filter(doc_types=tuple(doc_type), tags=tuple(tag))
    try:
        result = await container.retriever.retrieve(q, flt, top_k)
    except AppError as exc:  # every retriever failed: count them, then the error handler answers
        container.metrics.observe_retrieval({}, exc.details.get("degraded", ()))
        raise
    container.metrics.observe_retrieval(result.timings_ms, result.degraded)
    return {
        "query": q,
        "results": [
            {**chunk_json(r.chunk), "score": r.score, "scores": r.scores, "ranks": r.ranks} for r in result.chunks
        ],
        "degraded": result.degraded,
        "timings_ms": result.timings_ms,
    }


@router.get("/chunks/{chunk_id}", summary="One passage (to show a citation)")
def get_chunk(chunk_id: str, request: Request, principal: Principal = Depends(require(Role.AGENT))) -> dict[str, Any]:
    container = request.app.state.container
    chunk = container.chunk_store.get_many([chunk_id]).get(chunk_id)
    if chunk is None or not principal.search_filter().admits(chunk):
        raise AppError(ErrorCode.NOT_FOUND, "passage not found")
    return chunk_json(chunk)


class SectionOut(BaseModel):
    """The stored text of the section a passage belongs to; ``text[highlight_start:highlight_end]`` is the passage."""

    chunk_id: str
    document_id: str
    document_version: int
    title: str
    doc_type: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    text: str
    highlight_start: int = Field(ge=0)
    highlight_end: int = Field(ge=0)
    truncated: bool = Field(description="neighbouring passages of the section were left off to keep the answer short")


@router.get(
    "/chunks/{chunk_id}/section", response_model=SectionOut, summary="The section around a passage, passage marked"
)
def get_chunk_section(
    chunk_id: str, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> SectionOut:
    view = originals.section_of_chunk(
        db=request.app.state.container.db, tenant_id=principal.tenant_id, chunk_id=chunk_id,
        acl_scope=principal.acl_scope,
    )
    return SectionOut.model_validate(view, from_attributes=True)
