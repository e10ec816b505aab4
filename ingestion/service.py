"""Accepting documents: store the bytes, create or version the document row, create a job, dispatch it.

Durability: the job row is committed with ``dispatched=False`` before the broker is asked (an outbox). If the broker
is down the upload is still accepted; :meth:`IngestService.sweep` dispatches it once the broker is back, and also
re-dispatches jobs whose worker died (expired lease) until their attempts are used up.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sqlalchemy.orm import Session

from core.db import repositories as repo
from core.db.models import Document
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.filestore import FileStore, build_file_store, upload_key
from core.settings import Settings
from core.tracing import inject
from core.types import SYSTEM_ACTOR, Actor, acl_allows
from ingestion import state
from ingestion.hygiene import check_archive
from ingestion.parsing.parts import delete_parts

log = logging.getLogger(__name__)


class Dispatcher(Protocol):
    """Hands a job id to whatever runs the pipeline. Raises if the job could not be handed over (broker down)."""

    def dispatch(self, job_id: str) -> None: ...


class IndexRemover(Protocol):
    def delete(self, document_id: str, *, session: Session | None = None) -> None: ...


_UNSAFE = re.compile(r"[^\w.\- ()\[\]+,@]+", re.UNICODE)


def sanitize_filename(name: str | None) -> str:
    """A display-safe file name: no directories, no control characters, bounded length."""
    base = os.path.basename((name or "").replace("\\", "/")).strip()
    base = unicodedata.normalize("NFC", base)
    base = "".join(ch for ch in base if unicodedata.category(ch)[0] != "C")
    base = _UNSAFE.sub("_", base).strip(" .") or "upload"
    if len(base) > 200:
        stem, dot, ext = base.rpartition(".")
        base = (stem[: 200 - len(ext) - 1] + dot + ext) if dot and len(ext) <= 10 else base[:200]
    return base


@dataclass
class Submitted:
    document: Document
    duplicate: bool


class IngestService:
    def __init__(
        self,
        *,
        settings: Settings,
        db: Database,
        dispatcher: Dispatcher,
        indexes: IndexRemover,
        files: FileStore | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.dispatcher = dispatcher
        self.indexes = indexes
        self.files = files if files is not None else build_file_store(settings)

    # --- write paths ------------------------------------------------------------------------------------------------

    def submit(
        self,
        *,
        tenant_id: str,
        filename: str | None,
        data: bytes,
        acl_groups: list[str] | None = None,
        tags: list[str] | None = None,
        actor: Actor = SYSTEM_ACTOR,
        acl_scope: Sequence[str] | None = None,
    ) -> Submitted:
        """Store and queue a file. A file with the name of an existing document replaces it as a new version, but only
        a document the caller may read (``acl_scope``: the caller's groups, ``None`` for unrestricted callers); a
        same-named document outside the caller's groups is left alone and the file becomes a document of its own."""
        return self.submit_many(
            tenant_id=tenant_id, files=[(filename, data)], acl_groups=acl_groups, tags=tags, actor=actor,
            acl_scope=acl_scope,
        )[0]

    def check_upload(self, filename: str | None, data: bytes) -> None:
        """Raise the ``AppError`` that refuses this file (too large, a decompression bomb), naming it; else nothing."""
        limit = self.settings.ingestion.max_upload_bytes
        name = sanitize_filename(filename)
        if len(data) > limit:
            raise AppError(
                ErrorCode.PAYLOAD_TOO_LARGE,
                f"{name} is larger than the {limit // (1024 * 1024)} MB limit",
                details={"limit_bytes": limit, "size_bytes": len(data), "filename": name},
            )
        try:
            check_archive(data)
        except AppError as exc:
            raise AppError(exc.code, f"{name}: {exc.message}", details={**exc.details, "filename": name}) from None

    def submit_many(
        self,
        *,
        tenant_id: str,
        files: Sequence[tuple[str | None, bytes]],
        acl_groups: list[str] | None = None,
        tags: list[str] | None = None,
        actor: Actor = SYSTEM_ACTOR,
        acl_scope: Sequence[str] | None = None,
    ) -> list[Submitted]:
        """Store and queue several files, all or nothing: every file is checked before any is stored, and the rows
        are written in one transaction; if any file is refused (too large, a bomb, content stored outside the
        caller's groups) nothing is kept, neither rows nor the stored bytes this call wrote. See :meth:`submit`."""
        for filename, data in files:
            self.check_upload(filename, data)
        written: list[str] = []  # stored keys that did not exist before this call: removed again on failure
        results: list[tuple[str, bool]] = []
        job_ids: list[str] = []
        try:
            with self.db.session() as s:
                for filename, data in files:
                    doc_id, duplicate, job_id = self._store_one(
                        s, tenant_id=tenant_id, filename=filename, data=data, acl_groups=acl_groups, tags=tags,
                        actor=actor, acl_scope=acl_scope, written=written,
                    )
                    results.append((doc_id, duplicate))
                    if job_id is not None:
                        job_ids.append(job_id)
        except BaseException:
            for key in written:
                try:
                    self.files.delete(key)
                except Exception:  # noqa: BLE001 - the refusal matters more; an orphan file is only space
                    log.warning("could not remove %s after a refused upload", key)
            raise
        for job_id in job_ids:
            self._dispatch(job_id)
        with self.db.session() as s:
            return [
                Submitted(
                    document=repo.get_document(session=s, tenant_id=tenant_id, document_id=doc_id),
                    duplicate=duplicate,
                )
                for doc_id, duplicate in results
            ]

    def _store_one(
        self,
        s: Session,
        *,
        tenant_id: str,
        filename: str | None,
        data: bytes,
        acl_groups: list[str] | None,
        tags: list[str] | None,
        actor: Actor,
        acl_scope: Sequence[str] | None,
        written: list[str],
    ) -> tuple[str, bool, str | None]:
        """One file of :meth:`submit_many` in its transaction: ``(document id, duplicate, job id or None)``."""
        name = sanitize_filename(filename)
        digest = hashlib.sha256(data).hexdigest()
        same = repo.get_document_by_hash(session=s, tenant_id=tenant_id, content_hash=digest)
        if same is not None:
            if not acl_allows(same.acl_groups, acl_scope):
                raise AppError(
                    ErrorCode.CONFLICT,
                    f"{name}: the same content is already stored in a document outside your ACL groups",
                    details={"filename": name},
                )
            return same.id, True, None
        key = upload_key(tenant_id, digest)
        if not self.files.exists(key):
            self.files.put(key, data)
            written.append(key)
        doc = repo.get_document_by_filename(session=s, tenant_id=tenant_id, filename=name, acl_groups=acl_scope)
        if doc is not None:
            doc.version += 1
            doc.content_hash = digest
            doc.storage_path = key
            doc.size_bytes = len(data)
            state.requeue_document(session=s, document=doc)
            if acl_groups is not None:
                doc.acl_groups = acl_groups
            if tags is not None:
                doc.tags = tags
        else:
            doc = state.create_queued_document(
                session=s,
                tenant_id=tenant_id,
                filename=name,
                title=Path(name).stem,
                content_hash=digest,
                storage_path=key,
                size_bytes=len(data),
                version=1,
                acl_groups=acl_groups or [],
                tags=tags or [],
            )
        job = state.create_job(session=s, document=doc, trace_context=inject())
        repo.audit(
            session=s,
            tenant_id=tenant_id,
            actor=actor,
            action="document.upload",
            target=doc.id,
            detail={"filename": name, "version": doc.version, "bytes": len(data)},
        )
        return doc.id, False, job.id

    def reindex(
        self, *, tenant_id: str, document_id: str, actor: Actor = SYSTEM_ACTOR, acl_scope: Sequence[str] | None = None
    ) -> Document:
        with self.db.session() as s:
            doc = repo.get_document(session=s, tenant_id=tenant_id, document_id=document_id, acl_groups=acl_scope)
            state.requeue_for_reindex(session=s, document=doc)
            job = state.create_job(session=s, document=doc, trace_context=inject())
            repo.audit(session=s, tenant_id=tenant_id, actor=actor, action="document.reindex", target=doc.id)
            job_id = job.id
        self._dispatch(job_id)
        with self.db.session() as s:
            return repo.get_document(session=s, tenant_id=tenant_id, document_id=document_id)

    def delete(
        self, *, tenant_id: str, document_id: str, actor: Actor = SYSTEM_ACTOR, acl_scope: Sequence[str] | None = None
    ) -> None:
        with self.db.session() as s:
            doc = repo.get_document(session=s, tenant_id=tenant_id, document_id=document_id, acl_groups=acl_scope)
            storage = doc.storage_path
            self.indexes.delete(doc.id, session=s)
            repo.delete_document(session=s, document=doc)
            repo.audit(session=s, tenant_id=tenant_id, actor=actor, action="document.delete", target=document_id)
            others = repo.count_documents_sharing_storage(session=s, storage_path=storage, except_id=document_id)
        if storage and not others:
            self.files.delete(storage)
        delete_parts(self.files, document_id)

    # --- durability -------------------------------------------------------------------------------------------------

    def sweep(self) -> int:
        """Dispatch undispatched jobs (outbox) and jobs whose lease expired; fail those out of attempts.
        Returns how many jobs were dispatched."""
        failed: list[str] = []
        to_dispatch = state.sweep_stale(self.db, max_attempts=self.settings.ingestion.max_attempts, failed=failed)
        for document_id in failed:
            delete_parts(self.files, document_id)  # its worker died on every attempt: no attempt will resume them
        sent = 0
        for job_id in to_dispatch:
            try:
                self._dispatch(job_id, raise_errors=True)
                sent += 1
            except Exception:  # noqa: BLE001 - broker still down: try again next sweep
                log.info("broker still unavailable; job %s stays in the outbox", job_id)
                break
        return sent

    def _dispatch(self, job_id: str, *, raise_errors: bool = False) -> None:
        state.lease_for_queue(self.db, job_id, grace_s=self.settings.ingestion.lease_s)
        try:
            self.dispatcher.dispatch(job_id)
        except Exception as exc:
            log.warning("could not dispatch ingest job %s (%s); it stays in the outbox", job_id, exc)
            state.mark_dispatched(self.db, job_id, sent=False)
            if raise_errors:
                raise
            return
        state.mark_dispatched(self.db, job_id, sent=True)


__all__ = ["Dispatcher", "IngestService", "Submitted", "sanitize_filename"]
