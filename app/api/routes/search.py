"""GET /api/v1/search (ranked chunks with per-retriever scores), GET /api/v1/chunks/{id} (a cited passage) and
GET /api/v1/chunks/{id}/section (the section around it, to show a citation in context)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import originals
from app.services import search as search_service
from app.services.originals import SectionView
from app.services.search import Passage, SearchResults
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["search"])


@router.get("/search", summary="Hybrid search: ranked chunks with scores per retriever", response_model=SearchResults)
async def search(
    q: str = Query(min_length=1, max_length=search_service.MAX_QUERY_CHARS),
    top_k: int = Query(default=10, ge=1, le=search_service.MAX_TOP_K),
    doc_type: list[str] = Query(default=[]),
    tag: list[str] = Query(default=[]),
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> dict[str, Any]:
    return await search_service.search_chunks(
        retriever=container.retriever, metrics=container.metrics, principal=principal, query=q, top_k=top_k,
        doc_types=tuple(doc_type), tags=tuple(tag),
    )


@router.get("/chunks/{chunk_id}", summary="One passage (to show a citation)", response_model=Passage)
async def get_chunk(
    chunk_id: str,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> dict[str, Any]:
    return await run_in_threadpool(
        search_service.get_passage, chunk_store=container.chunk_store, principal=principal, chunk_id=chunk_id
    )


@router.get(
    "/chunks/{chunk_id}/section", response_model=SectionView, summary="The section around a passage, passage marked"
)
def get_chunk_section(
    chunk_id: str,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> SectionView:
    return originals.section_of_chunk(
        db=container.db, tenant_id=principal.tenant_id, chunk_id=chunk_id, acl_scope=principal.acl_scope
    )
