"""Documents: upload (many files), list, status with per-stage progress, delete, reindex."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, File, Form, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response

from app.api.auth import Principal, require
from app.core.db import repositories as repo
from app.core.db.models import Document
from app.core.errors import AppError, ErrorCode
from app.core.types import Role, clean_labels

router = APIRouter(prefix="/api/v1/documents", tags=["documents"])

MAX_FILES_PER_REQUEST = 50


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
        submitted = container.ingest.submit(
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


@router.get("", summary="List documents")
def list_documents(
    request: Request,
    status: str | None = Query(default=None, max_length=16),
    q: str | None = Query(default=None, max_length=200),
    principal: Principal = Depends(require(Role.AGENT)),
) -> dict[str, Any]:
    container = request.app.state.container
    with container.db.session() as s:
        docs = repo.list_documents(
            session=s, tenant_id=principal.tenant_id, status=status, q=q, acl_groups=principal.acl_scope
        )
        return {"documents": [document_json(d) for d in docs]}


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
