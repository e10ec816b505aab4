"""Documents as the portal and tools see them: upload (through the ingestion service), list a page at a time, one
document with its ingestion stages, delete and reindex. ACL groups limit which documents a caller sees at all
(``principal.acl_scope``), their metadata as well as their content."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import enum
import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, StringConstraints

from core.db import repositories as repo
from core.db.models import Document, IngestionJob
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.principal import Principal
from core.types import DocumentStatus
from ingestion.service import IngestService


class DocumentSort(str, enum.Enum):
    """Orders of the document list (each pages by keyset): newest or oldest change first, title A-Z or Z-A."""

    NEWEST = "newest"
    OLDEST = "oldest"
    TITLE = "title"
    TITLE_DESC = "title_desc"


class DocumentView(BaseModel):
    id: str
    title: str
    filename: str
    doc_type: str
    mime_type: str
    status: DocumentStatus
    version: int
    chunk_count: int
    failure_reason: str | None
    size_bytes: int
    page_count: int | None
    acl_groups: list[str]
    tags: list[str]
    chunker_version: str | None
    embedder_version: str | None
    created_at: dt.datetime
    updated_at: dt.datetime

    @classmethod
    def of(cls, doc: Document) -> DocumentView:
        return cls(
            id=doc.id, title=doc.title, filename=doc.filename, doc_type=doc.doc_type, mime_type=doc.mime_type,
            status=DocumentStatus(doc.status), version=doc.version, chunk_count=doc.chunk_count,
            failure_reason=doc.failure_reason, size_bytes=doc.size_bytes, page_count=doc.page_count,
            acl_groups=list(doc.acl_groups or []), tags=list(doc.tags or []), chunker_version=doc.chunker_version,
            embedder_version=doc.embedder_version,
            created_at=doc.created_at, updated_at=doc.updated_at,
        )


class StageView(BaseModel):
    """One ingestion stage (parse, chunk, embed, index, ...) with what the pipeline recorded for it."""

    model_config = {"extra": "allow"}
    name: str


class DocumentDetail(DocumentView):
    stages: list[StageView]
    attempts: int

    @classmethod
    def with_job(cls, doc: Document, job: IngestionJob | None) -> DocumentDetail:
        stages: dict[str, Any] = (job.stages if job is not None else {}) or {}
        return cls(
            **DocumentView.of(doc).model_dump(),
            stages=[StageView(name=name, **info) for name, info in stages.items()],
            attempts=job.attempts if job is not None else 0,
        )


class StatusCounts(BaseModel):
    """How many documents of each status match the list's other filters (every filter but ``status``), counted with
    the same tenant and ACL groups as the list: nobody counts a document they could not see."""

    queued: int
    parsing: int
    chunking: int
    embedding: int
    indexing: int
    indexed: int
    failed: int


class DocumentPage(BaseModel):
    documents: list[DocumentView]
    total: int
    limit: int
    next_cursor: str | None
    sort: DocumentSort
    status_counts: StatusCounts


class UploadedDocument(BaseModel):
    id: str
    filename: str
    status: DocumentStatus
    version: int
    duplicate: bool


class UploadResult(BaseModel):
    documents: list[UploadedDocument]


class ReindexQueued(BaseModel):
    id: str
    status: str
    version: int


def encode_cursor(doc: Document, sort: DocumentSort = DocumentSort.NEWEST) -> str:
    key = repo.document_sort_key(doc, sort.value)
    value = key.isoformat() if isinstance(key, dt.datetime) else str(key)
    raw = json.dumps([sort.value, value, doc.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, sort: DocumentSort = DocumentSort.NEWEST) -> tuple[Any, str]:
    """The ``(sort key, id)`` a cursor of :func:`encode_cursor` holds; 422 for a cursor that is not one, or that
    was made for another sort order. (A cursor of two items, ``[updated_at, id]``, is an older newest-first one.)"""
    try:
        raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(raw, list) or len(raw) not in (2, 3) or not all(isinstance(v, str) for v in raw):
            raise ValueError("not a cursor")
        made_for, value, doc_id = raw if len(raw) == 3 else [DocumentSort.NEWEST.value, *raw]
        if made_for != sort.value:
            raise AppError(
                ErrorCode.VALIDATION,
                f"cursor was made for sort={made_for}, not sort={sort.value}: start again without a cursor",
            )
        key: Any = dt.datetime.fromisoformat(value) if sort in (DocumentSort.NEWEST, DocumentSort.OLDEST) else value
        return key, doc_id
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError):
        raise AppError(
            ErrorCode.VALIDATION, "cursor is not valid: pass the next_cursor of a previous page unchanged"
        ) from None


def upload(
    *,
    ingest: IngestService,
    principal: Principal,
    files: list[tuple[str | None, bytes]],
    acl_groups: list[str] | None,
    tags: list[str] | None,
) -> UploadResult:
    """Store and queue the files, all or nothing (blocking: database and file writes): if one is refused, none is
    kept."""
    submitted = ingest.submit_many(
        tenant_id=principal.tenant_id, files=files, acl_groups=acl_groups, tags=tags, actor=principal.actor,
        acl_scope=principal.acl_scope,
    )
    return UploadResult(
        documents=[
            UploadedDocument(
                id=s.document.id, filename=s.document.filename, status=DocumentStatus(s.document.status),
                version=s.document.version, duplicate=s.duplicate,
            )
            for s in submitted
        ]
    )


def list_documents(
    *,
    db: Database,
    principal: Principal,
    status: str | None,
    q: str | None,
    limit: int,
    cursor: str | None,
    offset: int,
    sort: DocumentSort = DocumentSort.NEWEST,
    doc_type: str | None = None,
    tag: str | None = None,
) -> DocumentPage:
    """``total`` counts every match of the filters; ``next_cursor`` (null on the last page) fetches the next page of
    the same ``sort``; ``status_counts`` counts the matches of every filter but ``status``, per status."""
    after = decode_cursor(cursor, sort) if cursor else None
    filters: dict[str, Any] = {"q": q, "doc_type": doc_type, "tag": tag}
    with db.session() as s:
        tenant_id, scope = principal.tenant_id, principal.acl_scope
        docs = repo.list_documents(
            session=s, tenant_id=tenant_id, status=status, sort=sort.value, limit=limit + 1,
            offset=0 if after else offset, after=after, acl_groups=scope, **filters,
        )
        per_status = repo.count_documents_per_status(session=s, tenant_id=tenant_id, acl_groups=scope, **filters)
        counts = StatusCounts(**{st.value: per_status.get(st.value, 0) for st in DocumentStatus})
        total = per_status.get(status, 0) if status else sum(per_status.values())
        more = len(docs) > limit
        docs = docs[:limit]
        return DocumentPage(
            documents=[DocumentView.of(d) for d in docs],
            total=total,
            limit=limit,
            next_cursor=encode_cursor(docs[-1], sort) if more and docs else None,
            sort=sort,
            status_counts=counts,
        )


def get_document(*, db: Database, principal: Principal, document_id: str) -> DocumentDetail:
    with db.session() as s:
        doc = repo.get_document(
            session=s, tenant_id=principal.tenant_id, document_id=document_id, acl_groups=principal.acl_scope
        )
        return DocumentDetail.with_job(doc, repo.latest_job(session=s, document_id=doc.id))


def delete_document(*, ingest: IngestService, principal: Principal, document_id: str) -> None:
    ingest.delete(
        tenant_id=principal.tenant_id, document_id=document_id, actor=principal.actor, acl_scope=principal.acl_scope
    )


def reindex(*, ingest: IngestService, principal: Principal, document_id: str) -> ReindexQueued:
    doc = ingest.reindex(
        tenant_id=principal.tenant_id, document_id=document_id, actor=principal.actor, acl_scope=principal.acl_scope
    )
    return ReindexQueued(id=doc.id, status=doc.status, version=doc.version)


#: Most document ids one bulk request may name.
MAX_BULK_IDS = 500


class BulkOutcome(str, enum.Enum):
    """What a bulk action did to one id. An id of another tenant, or of a document outside the caller's ACL groups,
    reads ``not_found`` exactly like an id that never existed."""

    DONE = "done"
    NOT_FOUND = "not_found"
    FORBIDDEN = "forbidden"
    CONFLICT = "conflict"


class BulkRequest(BaseModel):
    ids: list[Annotated[str, StringConstraints(min_length=1, max_length=64)]] = Field(
        min_length=1, max_length=MAX_BULK_IDS, description=f"document ids, at most {MAX_BULK_IDS}"
    )


class BulkItemResult(BaseModel):
    id: str
    result: BulkOutcome
    message: str | None = None


class BulkResult(BaseModel):
    action: Literal["delete", "reindex"]
    results: list[BulkItemResult]
    done: int
    not_found: int
    forbidden: int
    conflict: int


_BULK_OUTCOMES = {
    ErrorCode.NOT_FOUND: BulkOutcome.NOT_FOUND,
    ErrorCode.FORBIDDEN: BulkOutcome.FORBIDDEN,
    ErrorCode.CONFLICT: BulkOutcome.CONFLICT,
}


def bulk(
    *, ingest: IngestService, principal: Principal, action: Literal["delete", "reindex"], ids: list[str]
) -> BulkResult:
    """Delete or reindex each id (repeats once) with exactly the checks of the single-document routes (tenant, ACL
    groups), each audited like a single action, plus one ``document.bulk_<action>`` event with the tally. Errors
    that are not about the id (the database is down) end the request with that error."""
    results: list[BulkItemResult] = []
    for document_id in dict.fromkeys(ids):
        try:
            if action == "delete":
                delete_document(ingest=ingest, principal=principal, document_id=document_id)
            else:
                reindex(ingest=ingest, principal=principal, document_id=document_id)
        except AppError as exc:
            outcome = _BULK_OUTCOMES.get(exc.code)
            if outcome is None:
                raise
            message = "document not found" if outcome is BulkOutcome.NOT_FOUND else exc.message
            results.append(BulkItemResult(id=document_id, result=outcome, message=message))
            continue
        results.append(BulkItemResult(id=document_id, result=BulkOutcome.DONE))
    tally = {o.value: sum(1 for r in results if r.result is o) for o in BulkOutcome}
    with ingest.db.session() as s:
        repo.audit(
            session=s, tenant_id=principal.tenant_id, actor=principal.actor, action=f"document.bulk_{action}",
            detail={"requested": len(results), **tally},
        )
    return BulkResult(action=action, results=results, **tally)
