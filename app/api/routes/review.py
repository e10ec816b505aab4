"""The review queue, regression runs and knowledge gaps (editors), usage analytics (admins). Logic lives in
``app.services.review`` and ``app.services.analytics``."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import analytics, in_transaction, review
from core.types import Role

router = APIRouter(prefix="/api/v1", tags=["review"])


class Source(BaseModel):
    n: int | None = None
    chunk_id: str | None = None
    document_id: str | None = None
    title: str = ""
    section_path: list[str] = []
    page_start: int | None = None
    page_end: int | None = None


class Expected(BaseModel):
    chunk_id: str | None
    document_id: str | None
    title: str
    section_path: list[str]
    facts: list[str]
    document_missing: bool


class ReviewItemOut(BaseModel):
    id: str
    message_id: str
    question: str
    answer: str
    outcome: str
    reasons: list[str]
    comment: str
    sources: list[Source]
    hidden_sources: int = Field(description="sources from documents outside the reviewer's ACL groups (not shown)")
    status: str
    expected: Expected
    reviewed_at: dt.datetime | None
    created_at: dt.datetime


class ReviewList(BaseModel):
    items: list[ReviewItemOut]


class SectionHit(BaseModel):
    chunk_id: str
    document_id: str
    title: str
    section_path: list[str]
    page_start: int | None
    text: str
    score: float


class SectionSearch(BaseModel):
    query: str
    results: list[SectionHit]


class ReviewUpdate(BaseModel):
    chunk_id: str | None = Field(default=None, max_length=64, description="the passage whose section answers")
    facts: list[str] = Field(default_factory=list, max_length=review.MAX_FACTS)
    document_missing: bool = False
    status: Literal["reviewed", "dismissed", "open"] = "reviewed"


class SectionRef(BaseModel):
    document_id: str | None
    title: str
    section_path: list[str]


class RunResult(BaseModel):
    item_id: str
    question: str
    passed: bool
    section_ok: bool | None
    facts_ok: bool | None
    document_missing_ok: bool | None
    missing_facts: list[str]
    expected_section: SectionRef
    cited_sections: list[SectionRef]
    outcome: str
    answer: str
    degraded: list[str] = Field(default_factory=list, description="answer stages skipped or replaced in this replay")
    error: str
    change: Literal["new", "same", "fixed", "broke"]
    latency_ms: float


class RunOut(BaseModel):
    id: str
    actor_name: str
    started_at: dt.datetime
    finished_at: dt.datetime | None
    total: int
    passed: int
    failed: int
    previous_run_id: str | None
    changes: dict[str, int]
    results: list[RunResult]


class RunList(BaseModel):
    runs: list[RunOut]


class GapDocument(BaseModel):
    document_id: str
    title: str
    section_path: list[str]
    score: float


class GapTopic(BaseModel):
    label: str
    terms: list[str]
    count: int
    reasons: dict[str, int]
    trend: list[int] = Field(description="questions per day, oldest first")
    examples: list[str]
    documents: list[GapDocument]


class GapsReport(BaseModel):
    days: int
    total: int
    topics: list[GapTopic]


class DayCount(BaseModel):
    day: str
    questions: int
    tokens: int


class CitedDocument(BaseModel):
    document_id: str
    title: str
    answers: int


class UncitedDocument(BaseModel):
    document_id: str
    title: str
    created_at: dt.datetime


class NeverCited(BaseModel):
    days: int
    count: int
    documents: list[UncitedDocument]


class AnalyticsReport(BaseModel):
    days: int
    questions_per_day: list[DayCount]
    outcome_mix: dict[str, int]
    latency_ms: dict[str, dict[str, float]]
    most_cited: list[CitedDocument]
    never_cited: NeverCited


def _container(request: Request) -> Container:
    return get_container(request)


@router.get("/review/items", response_model=ReviewList, summary="The review queue (newest first)")
def list_items(
    request: Request,
    status: Literal["open", "reviewed", "dismissed", "all"] = "open",
    limit: int = Query(default=100, ge=1, le=500),
    principal: Principal = Depends(require(Role.EDITOR)),
) -> Any:
    items = in_transaction(
        _container(request).db,
        review.list_items,
        tenant_id=principal.tenant_id,
        acl_groups=principal.acl_scope,
        status=status,
        limit=limit,
    )
    return {"items": items}


@router.get("/review/items/{item_id}", response_model=ReviewItemOut, summary="One review item")
def get_item(item_id: str, request: Request, principal: Principal = Depends(require(Role.EDITOR))) -> Any:
    return in_transaction(
        _container(request).db,
        review.get_item,
        tenant_id=principal.tenant_id,
        item_id=item_id,
        acl_groups=principal.acl_scope,
    )


@router.get("/review/items/{item_id}/search", response_model=SectionSearch, summary="Search sections for a review item")
async def search_item(
    item_id: str,
    request: Request,
    q: str = Query(default="", max_length=2000, description="defaults to the item's question"),
    top_k: int = Query(default=8, ge=1, le=50),
    principal: Principal = Depends(require(Role.EDITOR)),
) -> Any:
    container = _container(request)

    def question() -> str:
        return in_transaction(container.db, review.get_question, tenant_id=principal.tenant_id, item_id=item_id)

    asked = await run_in_threadpool(question)
    query = q.strip() or asked
    results = await review.search_for_item(
        retriever=container.retriever, flt=principal.search_filter(), query=query, top_k=top_k
    )
    return {"query": query, "results": results}


@router.put("/review/items/{item_id}", response_model=ReviewItemOut, summary="Review an item")
def update_item(
    item_id: str, body: ReviewUpdate, request: Request, principal: Principal = Depends(require(Role.EDITOR))
) -> Any:
    container = _container(request)
    return in_transaction(
        container.db,
        review.review_item,
        chunk_store=container.chunk_store,
        flt=principal.search_filter(),
        item_id=item_id,
        reviewer_id=principal.id,
        chunk_id=body.chunk_id,
        facts=body.facts,
        document_missing=body.document_missing,
        status=body.status,
    )


@router.get("/review/regression", response_model=ReviewList, summary="The regression set (reviewed items)")
def regression_set(request: Request, principal: Principal = Depends(require(Role.EDITOR))) -> Any:
    items = in_transaction(
        _container(request).db,
        review.list_items,
        tenant_id=principal.tenant_id,
        acl_groups=principal.acl_scope,
        status="reviewed",
        limit=500,
    )
    return {"items": items}


@router.post(
    "/review/runs", response_model=RunOut, status_code=201, summary="Replay the regression set through the answers"
)
async def start_run(request: Request, principal: Principal = Depends(require(Role.ADMIN))) -> Any:
    container = _container(request)
    return await review.run_regression(
        db=container.db,
        answers=container.answers,
        flt=principal.search_filter(),
        actor_name=principal.name,
        top_k=container.settings.retrieval.top_k,
    )


@router.get("/review/runs", response_model=RunList, summary="Recent regression runs (without their results)")
def list_runs(request: Request, principal: Principal = Depends(require(Role.EDITOR))) -> Any:
    return {"runs": in_transaction(_container(request).db, review.list_runs, tenant_id=principal.tenant_id)}


@router.get("/review/runs/{run_id}", response_model=RunOut, summary="One regression run with per-item results")
def get_run(run_id: str, request: Request, principal: Principal = Depends(require(Role.EDITOR))) -> Any:
    return in_transaction(_container(request).db, review.get_run, tenant_id=principal.tenant_id, run_id=run_id)


@router.get(
    "/review/gaps",
    response_model=GapsReport,
    summary="Knowledge gaps: unanswered or disliked questions grouped into topics (format=csv for a download)",
    responses={200: {"content": {"text/csv": {}}}},
)
async def gaps(
    request: Request,
    days: int = Query(default=30, ge=1, le=365),
    format: Literal["json", "csv"] = "json",
    principal: Principal = Depends(require(Role.EDITOR)),
) -> Any:
    container = _container(request)

    def build() -> dict[str, Any]:
        return in_transaction(
            container.db, review.gaps_report, embedder=container.embedder, tenant_id=principal.tenant_id, days=days
        )

    report = await run_in_threadpool(build)
    await review.nearest_documents(
        retriever=container.retriever, flt=principal.search_filter(), topics=report["topics"]
    )
    if format == "csv":
        return Response(
            review.gaps_csv(report),
            media_type="text/csv; charset=utf-8",
            headers={"Content-Disposition": 'attachment; filename="knowledge-gaps.csv"'},
        )
    return report


@router.get("/analytics", response_model=AnalyticsReport, summary="Usage analytics (admins)", tags=["admin"])
def usage_analytics(
    request: Request,
    days: int = Query(default=30, ge=1, le=365),
    principal: Principal = Depends(require(Role.ADMIN)),
) -> Any:
    return in_transaction(_container(request).db, analytics.usage_report, tenant_id=principal.tenant_id, days=days)
