"""Hybrid search and single passages for a principal: what ``GET /api/v1/search``, ``GET /api/v1/chunks/{id}`` and
the MCP tools ``search_knowledge_base`` / ``get_passage`` return. The principal's tenant and ACL groups filter every
result; a passage the principal may not see is "not found", exactly like one that does not exist."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from app.services.metrics import Metrics
from core.errors import AppError, ErrorCode
from core.principal import Principal
from core.types import ChunkRecord
from retrieval.protocols import ChunkStore, Retriever

MAX_QUERY_CHARS = 2000
MAX_TOP_K = 100


class Passage(BaseModel):
    chunk_id: str
    document_id: str
    document_version: int
    title: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    text: str
    doc_type: str
    element_types: list[str]
    chunker_version: str


class SearchHit(Passage):
    score: float
    scores: dict[str, float]
    ranks: dict[str, int]


class SearchResults(BaseModel):
    query: str
    results: list[SearchHit]
    degraded: list[str]
    timings_ms: dict[str, float]


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


async def search_chunks(
    *,
    retriever: Retriever,
    metrics: Metrics,
    principal: Principal,
    query: str,
    top_k: int = 10,
    doc_types: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Ranked chunks with their fused score, the score and rank per retriever, degraded stages and timings."""
    flt = principal.search_filter(doc_types=doc_types, tags=tags)
    try:
        result = await retriever.retrieve(query, flt, top_k)
    except AppError as exc:  # every retriever failed: count them, then let the caller's error handling answer
        metrics.observe_retrieval({}, exc.details.get("degraded", ()))
        raise
    metrics.observe_retrieval(result.timings_ms, result.degraded)
    return {
        "query": query,
        "results": [
            {**chunk_json(r.chunk), "score": r.score, "scores": r.scores, "ranks": r.ranks} for r in result.chunks
        ],
        "degraded": result.degraded,
        "timings_ms": result.timings_ms,
    }


def get_passage(*, chunk_store: ChunkStore, principal: Principal, chunk_id: str) -> dict[str, Any]:
    """One passage the principal may see (blocking: call it off the event loop from async code)."""
    chunk = chunk_store.get_many([chunk_id]).get(chunk_id)
    if chunk is None or not principal.search_filter().admits(chunk):
        raise AppError(ErrorCode.NOT_FOUND, "passage not found")
    return chunk_json(chunk)
