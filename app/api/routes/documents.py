"""Documents: upload (many files), list, status with per-stage progress, delete, reindex, the original file."""

from __future__ import annotations

from fastapi import APIRouter, Depends, File, Form, Query, UploadFile
from fastapi.responses import Response
from starlette.concurrency import run_in_threadpool

from app.api.auth import Principal, require
from app.api.deps import get_container
from app.container import Container
from app.services import documents, originals
from app.services.documents import (
    MAX_BULK_IDS,
    BulkRequest,
    BulkResult,
    DocumentDetail,
    DocumentPage,
    DocumentSort,
    ReindexQueued,
    UploadResult,
)
from core.errors import AppError, ErrorCode
from core.types import LABEL_MAX_CHARS, Role, clean_labels

router = APIRouter(prefix="/api/v1/documents", tags=["documents"])

MAX_FILES_PER_REQUEST = 50
#: Largest page of the document list; the default page is half of it (500, what the list always returned).
MAX_PAGE_SIZE = 1000


def _split(value: str | None, field: str) -> list[str] | None:
    """A comma-separated form field as clean labels (422 naming the field when a value is too long or odd)."""
    if value is None:
        return None
    try:
        return clean_labels(value.split(","), field.replace("_", " ").replace("acl", "ACL"))
    except ValueError as exc:
        raise AppError(ErrorCode.VALIDATION, str(exc), details={"field": field}) from None


@router.post("", status_code=202, summary="Upload one or more files for ingestion", response_model=UploadResult)
async def upload(
    files: list[UploadFile] = File(..., description="one or more files"),
    acl_groups: str | None = Form(default=None, description="comma-separated groups allowed to see these documents"),
    tags: str | None = Form(default=None, description="comma-separated tags"),
    principal: Principal = Depends(require(Role.EDITOR)),
    container: Container = Depends(get_container),
) -> UploadResult:
    if len(files) > MAX_FILES_PER_REQUEST:
        raise AppError(ErrorCode.VALIDATION, f"at most {MAX_FILES_PER_REQUEST} files per request")
    limit = container.settings.ingestion.max_upload_bytes
    groups, tag_values = _split(acl_groups, "acl_groups"), _split(tags, "tags")
    received: list[tuple[str | None, bytes]] = []
    for upload_file in files:
        data = await upload_file.read(limit + 1)
        if len(data) > limit:
            raise AppError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"{upload_file.filename or 'file'} is larger than the {limit // (1024 * 1024)} MB limit",
                details={"limit_bytes": limit, "filename": upload_file.filename},
            )
        received.append((upload_file.filename, data))
    # Storing and queueing write files and rows: off the event loop.
    return await run_in_threadpool(
        documents.upload, ingest=container.ingest, principal=principal, files=received, acl_groups=groups,
        tags=tag_values,
    )


@router.get("", summary="List documents a page at a time, sorted and filtered, with counts per status",
            response_model=DocumentPage)
def list_documents(
    status: str | None = Query(default=None, max_length=16),
    q: str | None = Query(default=None, max_length=200),
    doc_type: str | None = Query(default=None, max_length=32, description="detected file type: pdf, docx, md, ..."),
    tag: str | None = Query(default=None, max_length=LABEL_MAX_CHARS, description="documents carrying this tag"),
    sort: DocumentSort = Query(default=DocumentSort.NEWEST, description="order of the list; each pages by cursor"),
    limit: int = Query(default=MAX_PAGE_SIZE // 2, ge=1, le=MAX_PAGE_SIZE, description="documents per page"),
    cursor: str | None = Query(default=None, max_length=512, description="next_cursor of the previous page"),
    offset: int = Query(default=0, ge=0, le=10_000_000, description="rows to skip (when no cursor is given)"),
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> DocumentPage:
    """``total`` counts every match of the filters; ``next_cursor`` (null on the last page) fetches the next page of
    the same ``sort``; ``status_counts`` counts the matches of every filter except ``status``, per status, among the
    documents the caller may see."""
    return documents.list_documents(
        db=container.db, principal=principal, status=status, q=q, limit=limit, cursor=cursor, offset=offset,
        sort=sort, doc_type=doc_type, tag=tag,
    )


@router.post(
    "/bulk-delete",
    summary=f"Delete up to {MAX_BULK_IDS} documents; the result of each id",
    response_model=BulkResult,
)
def bulk_delete(
    body: BulkRequest,
    principal: Principal = Depends(require(Role.EDITOR)),
    container: Container = Depends(get_container),
) -> BulkResult:
    """Each id gets ``done``, ``not_found`` (also for a document the caller may not see), ``forbidden`` or
    ``conflict``, exactly as the single ``DELETE`` would have answered."""
    return documents.bulk(ingest=container.ingest, principal=principal, action="delete", ids=body.ids)


@router.post(
    "/bulk-reindex",
    summary=f"Parse and index up to {MAX_BULK_IDS} documents again; the result of each id",
    response_model=BulkResult,
)
def bulk_reindex(
    body: BulkRequest,
    principal: Principal = Depends(require(Role.EDITOR)),
    container: Container = Depends(get_container),
) -> BulkResult:
    """Each id gets ``done`` (queued), ``not_found`` (also for a document the caller may not see), ``forbidden`` or
    ``conflict`` (already being indexed), exactly as the single reindex would have answered."""
    return documents.bulk(ingest=container.ingest, principal=principal, action="reindex", ids=body.ids)


@router.get(
    "/{document_id}", summary="A document with its ingestion stages and failure reason", response_model=DocumentDetail
)
def get_document(
    document_id: str,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> DocumentDetail:
    return documents.get_document(db=container.db, principal=principal, document_id=document_id)


@router.delete("/{document_id}", status_code=204, summary="Delete a document from every index and the database")
def delete_document(
    document_id: str,
    principal: Principal = Depends(require(Role.EDITOR)),
    container: Container = Depends(get_container),
) -> Response:
    documents.delete_document(ingest=container.ingest, principal=principal, document_id=document_id)
    return Response(status_code=204)


@router.post(
    "/{document_id}/reindex",
    status_code=202,
    summary="Parse and index the document again",
    response_model=ReindexQueued,
)
def reindex(
    document_id: str,
    principal: Principal = Depends(require(Role.EDITOR)),
    container: Container = Depends(get_container),
) -> ReindexQueued:
    return documents.reindex(ingest=container.ingest, principal=principal, document_id=document_id)


#: Sent with every original: nothing in an uploaded file may run, frame us, or be kept by a cache.
_ORIGINAL_SANDBOX = "default-src 'none'; style-src 'unsafe-inline'; sandbox"


@router.get(
    "/{document_id}/original",
    summary="The uploaded file, shown inline (HTML and other text formats as text/plain)",
    response_class=Response,
    responses={200: {"content": {"application/pdf": {}, "text/plain": {}, "application/octet-stream": {}}}},
)
def get_original(
    document_id: str,
    principal: Principal = Depends(require(Role.AGENT)),
    container: Container = Depends(get_container),
) -> Response:
    original = originals.open_original(
        db=container.db, files=container.ingest.files, tenant_id=principal.tenant_id,
        document_id=document_id, acl_scope=principal.acl_scope,
    )
    headers = {
        "Content-Disposition": original.content_disposition,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "private, no-store",
        "X-Document-Version": str(original.document_version),
    }
    if original.media_type != originals.PDF:
        headers["Content-Security-Policy"] = _ORIGINAL_SANDBOX
    return Response(original.data, media_type=original.media_type, headers=headers)
