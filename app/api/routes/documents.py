"""Documents: upload (many files), list, status with per-stage progress, delete, reindex."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse, Response

from app.api.auth import Principal, require
from core.db import repositories as repo
from core.db.models import Document
from core.errors import AppError, ErrorCode
from core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1/documents", tags=["documents"])

MAX_FILES_PER_REQUEST = 50
#: Largest page of the document list; the default page is half of it (500, what the list always returned).
MAX_PAGE_SIZE = 1000


def document_json(doc: Document, *, with_stages: bool = False, job: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": doc.id,
        "title": doc.title,
        "filename": doc.filename,
        "doc_type": doc.doc_type,
        "mime_type": doc.mime_type,
        "status": doc.status,
        "version": doc.version,
        "chunk_count": doc.chunk_count,
        "failure_reason": doc.failure_reason,
        "size_bytes": doc.size_bytes,
        "page_count": doc.page_count,
        "acl_groups": doc.acl_groups,
        "tags": doc.tags,
        "chunker_version": doc.chunker_version,
        "embedder_version": doc.embedder_version,
        "created_at": doc.created_at,
        "updated_at": doc.updated_at,
    }
    if with_stages:
        stages = (job.stages if job is not None else {}) or {}
        out["stages"] = [{"name": name, **info} for name, info in stages.items()]
        out["attempts"] = job.attempts if job is not None else 0
    return out


def _split(value: str | None, field: str) -> list[str] | None:
    """A comma-separated form field as clean labels (422 naming the field when a value is too long or odd)."""
    if value is None:
        return None
    try:
        return clean_labels(value.split(","), field.replace("_", " ").replace("acl", "ACL"))
    except ValueError as exc:
        raise AppError(ErrorCode.VALIDATION, str(exc), details={"field": field}) from None


@router.post("", status_code=202, summary="Upload one or more files for ingestion")
async def upload(
    request: Request,
    files: list[UploadFile] = File(..., description="one or more files"),
    acl_groups: str | None = Form(default=None, description="comma-separated groups allowed to see these documents"),
    tags: str | None = Form(default=None, description="comma-separated tags"),
    principal: Principal = Depends(require(Role.EDITOR)),
) -> JSONResponse:
    container = request.app.state.container
    if len(files) > MAX_FILES_PER_REQUEST:
        raise AppError(ErrorCode.VALIDATION, f"at most {MAX_FILES_PER_REQUEST} files per request")
    limit = container.settings.ingestion.max_upload_bytes
    groups, tag_values = _split(acl_groups, "acl_groups"), _split(tags, "tags")
    results = []
    for upload_file in files:
        data = await upload_file.read(limit + 1)
        if len(data) > limit:
            raise AppError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"{upload_file.filename or 'file'} is larger than the {limit // (1024 * 1024)} MB limit",
                details={"limit_bytes": limit, "filename": upload_file.filename},
            )
        # Database, file store (object storage in distributed mode) and broker: off the event loop.
        submitted = await run_in_threadpool(
            container.ingest.submit,
            tenant_id=principal.tenant_id,
            filename=upload_file.filename,
            data=data,
            acl_groups=groups,
            tags=tag_values,
            actor=principal.actor,
            acl_scope=principal.acl_scope,
        )
        doc = submitted.document
        results.append(
            {
                "id": doc.id,
                "filename": doc.filename,
                "status": doc.status,
                "version": doc.version,
                "duplicate": submitted.duplicate,
            }
        )
    return JSONResponse({"documents": results}, status_code=202)


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


@router.get("", summary="List documents, newest first, a page at a time")
def list_documents(
    request: Request,
    status: str | None = Query(default=None, max_length=16),
    q: str | None = Query(default=None, max_length=200),
    limit: int = Query(default=MAX_PAGE_SIZE // 2, ge=1, le=MAX_PAGE_SIZE, description="documents per page"),
    cursor: str | None = Query(default=None, max_length=512, description="next_cursor of the previous page"),
    offset: int = Query(default=0, ge=0, le=10_000_000, description="rows to skip (when no cursor is given)"),
    principal: Principal = Depends(require(Role.AGENT)),
) -> dict[str, Any]:
    """``total`` counts every match of the filters; ``next_cursor`` (null on the last page) fetches the next page."""
    container = request.app.state.container
    after = decode_cursor(cursor) if cursor else None
    with container.db.session() as s:
        tenant_id, scope = principal.tenant_id, principal.acl_scope
        skip = 0 if after else offset
        docs = repo.list_documents(
            session=s,
            tenant_id=tenant_id,
            status=status,
            q=q,
            limit=limit + 1,
            offset=skip,
            after=after,
            acl_groups=scope,
        )
        total = repo.count_documents(session=s, tenant_id=tenant_id, status=status, q=q, acl_groups=scope)
        more = len(docs) > limit
        docs = docs[:limit]
        return {
            "documents": [document_json(d) for d in docs],
            "total": total,
            "limit": limit,
            "next_cursor": encode_cursor(docs[-1]) if more and docs else None,
        }


@router.get("/{document_id}", summary="A document with its ingestion stages and failure reason")
def get_document(
    document_id: str, request: Request, principal: Principal = Depends(require(Role.AGENT))
) -> dict[str, Any]:
    container = request.app.state.container
    with container.db.session() as s:
        doc = repo.get_document(
            session=s, tenant_id=principal.tenant_id, document_id=document_id, acl_groups=principal.acl_scope
        )
        job = repo.latest_job(session=s, document_id=doc.id)
        return document_json(doc, with_stages=True, job=job)


@router.delete("/{document_id}", status_code=204, summary="Delete a document from every index and the database")
def delete_document(
    document_id: str, request: Request, principal: Principal = Depends(require(Role.EDITOR))
) -> Response:
    request.app.state.container.ingest.delete(
        tenant_id=principal.tenant_id, document_id=document_id, actor=principal.actor, acl_scope=principal.acl_scope
    )
    return Response(status_code=204)


@router.post("/{document_id}/reindex", status_code=202, summary="Parse and index the document again")
def reindex(document_id: str, request: Request, principal: Principal = Depends(require(Role.EDITOR))) -> JSONResponse:
    doc = request.app.state.container.ingest.reindex(
        tenant_id=principal.tenant_id, document_id=document_id, actor=principal.actor, acl_scope=principal.acl_scope
    )
    return JSONResponse({"id": doc.id, "status": doc.status, "version": doc.version}, status_code=202)
