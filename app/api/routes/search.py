"""GET /api/v1/search (ranked chunks with per-retriever scores) and GET /api/v1/chunks/{id} (a cited passage)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request

from app.api.auth import Principal, require
from app.services import search as search_service
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["search"])


@router.get("/search", summary="Hybrid search: ranked chunks with scores per retriever")
async def search(
    request: Request,
    q: str = Query(min_length=1, max_length=search_service.MAX_QUERY_CHARS),
    top_k: int = Query(default=10, ge=1, le=search_service.MAX_TOP_K),
    doc_type: list[str] = Query(default=[]),
    tag: list[str] = Query(default=[]),
    principal: Principal = Depends(require(Role.AGENT)),
) -> dict[str, Any]:
    return await search_service.search_chunks(
        request.app.state.container, principal, query=q, top_k=top_k, doc_types=tuple(doc_type), tags=tuple(tag)
    )


@router.get("/chunks/{chunk_id}", summary="One passage (to show a citation)")
def get_chunk(chunk_id: str, request: Request, principal: Principal = Depends(require(Role.AGENT))) -> dict[str, Any]:
    return search_service.get_passage(request.app.state.container, principal, chunk_id=chunk_id)
