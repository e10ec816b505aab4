"""Documents as the portal and tools see them: upload (through the ingestion service), list a page at a time, one
document with its ingestion stages, delete and reindex. ACL groups limit which documents a caller sees at all
(``principal.acl_scope``), their metadata as well as their content."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any

from pydantic import BaseModel

from core.db import repositories as repo
from core.db.models import Document, IngestionJob
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.principal import Principal
from core.types import DocumentStatus
from ingestion.service import IngestService


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


class DocumentPage(BaseModel):
    documents: list[DocumentView]
    total: int
    limit: int
    next_cursor: str | None


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


def encode_cursor(doc: Document) -> str:
    raw = json.dumps([doc.updated_at.isoformat(), doc.id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[dt.datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        updated_at, doc_id = json.loads(raw)
        return dt.datetime.fromisoformat(updated_at), str(doc_id)
    except (ValueError, TypeError, binascii.Error):
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
    """Store and queue each file (blocking: database and file writes)."""
    results = []
    for filename, data in files:
        submitted = ingest.submit(
            tenant_id=principal.tenant_id, filename=filename, data=data, acl_groups=acl_groups, tags=tags,
            actor=principal.actor, acl_scope=principal.acl_scope,
        )
        doc = submitted.document
        results.append(
            UploadedDocument(
                id=doc.id, filename=doc.filename, status=DocumentStatus(doc.status), version=doc.version,
                duplicate=submitted.duplicate,
            )
        )
    return UploadResult(documents=results)


def list_documents(
    *,
    db: Database,
    principal: Principal,
    status: str | None,
    q: str | None,
    limit: int,
    cursor: str | None,
    offset: int,
) -> DocumentPage:
    """``total`` counts every match of the filters; ``next_cursor`` (null on the last page) fetches the next page."""
    after = decode_cursor(cursor) if cursor else None
    with db.session() as s:
        tenant_id, scope = principal.tenant_id, principal.acl_scope
        docs = repo.list_documents(
            session=s, tenant_id=tenant_id, status=status, q=q, limit=limit + 1, offset=0 if after else offset,
            after=after, acl_groups=scope,
        )
        total = repo.count_documents(session=s, tenant_id=tenant_id, status=status, q=q, acl_groups=scope)
        more = len(docs) > limit
        docs = docs[:limit]
        return DocumentPage(
            documents=[DocumentView.of(d) for d in docs],
            total=total,
            limit=limit,
            next_cursor=encode_cursor(docs[-1]) if more and docs else None,
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
