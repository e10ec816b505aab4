"""The one owner of ingestion state: every job and document status transition is written here, and nowhere else.

Statuses (:class:`core.types.DocumentStatus`, shared by jobs and documents)::

    queued > parsing > chunking > embedding > indexing > indexed | failed(reason)

Rules (:func:`check_transition`):

- a stage (parsing .. indexing) may begin from any state that is not terminal (a retried or re-claimed job starts
  again at parsing);
- ``indexed`` only from ``indexing``;
- ``failed`` from any state that is not terminal, and always with a reason;
- ``queued`` from a state that is not terminal (a retry later); from a terminal state only by a requeue (a new version
  of the file or a reindex);
- nothing else leaves a terminal state.

Each stage records status (:class:`core.types.StageStatus`), progress (0..1), start, finish and duration. The document
row mirrors the status of its latest job so listings need no join (an older job of the same document, still running
after a new version was queued, no longer writes the document's status).

Leases: a tracker that knows its ``owner`` renews the job's lease with every write (stage start, progress, finish),
so a long job keeps its lease while it shows signs of life, and a dead worker's lease still expires ``lease_s`` after
its last write. If the lease has meanwhile gone to another worker (this one stalled past its lease), the next write
raises ``LeaseLost`` and this worker stops without touching the job, which now belongs to the other.

Outbox: a job is committed with ``dispatched=False`` before the broker is asked; :func:`sweep_stale` finds jobs never
dispatched or whose lease expired, and fails those out of attempts.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core.db import repositories as repo
from core.db.models import Document, IngestionJob, as_utc, utcnow
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.tracing import tracer
from core.types import STAGES, TERMINAL_STATUSES, DocumentStatus, StageStatus

#: What :func:`job_status` answers for a job that does not exist (deleted with its document).
MISSING = "missing"


class LeaseLost(Exception):
    """Another worker took this job's lease after it expired; this worker must stop working on it."""


class InvalidTransition(ValueError):
    """A status change the rules do not allow (a bug in the caller, never the user's input)."""


# --- the rules --------------------------------------------------------------------------------------------------------


def check_transition(
    current: str | DocumentStatus, target: DocumentStatus, *, reason: str | None = None, requeue: bool = False
) -> DocumentStatus:
    """Return ``target`` if ``current -> target`` is allowed, else raise :class:`InvalidTransition`.
    ``requeue``: a new version or a reindex, which may queue a document whatever its state."""
    now = DocumentStatus(current)
    if target is DocumentStatus.FAILED and not (reason or "").strip():
        raise InvalidTransition("a job or document fails only with a reason")
    if target is DocumentStatus.QUEUED and requeue:
        return target
    if now.terminal:
        raise InvalidTransition(f"{now.value} is terminal: it cannot become {target.value} (only a reindex queues it)")
    if target is DocumentStatus.INDEXED and now is not DocumentStatus.INDEXING:
        raise InvalidTransition(f"only an indexing job becomes indexed, not a {now.value} one")
    return target


def _set_job(job: IngestionJob, target: DocumentStatus, *, reason: str | None = None, requeue: bool = False) -> None:
    job.status = check_transition(job.status, target, reason=reason, requeue=requeue).value


def _mirror(session: Session, job: IngestionJob, doc: Document | None, **fields: Any) -> None:
    """Copy ``fields`` (status, failure reason, ...) onto the job's document if this is the document's latest job."""
    if doc is None or repo.latest_job(session=session, document_id=doc.id) is not job:
        return
    for name, value in fields.items():
        setattr(doc, name, value.value if isinstance(value, DocumentStatus) else value)


# --- documents and jobs enter the queue -------------------------------------------------------------------------------


def create_queued_document(*, session: Session, **fields: Any) -> Document:
    """A new document row, queued."""
    return repo.create_document(session=session, status=DocumentStatus.QUEUED.value, **fields)


def requeue_document(*, session: Session, document: Document) -> None:
    """Queue ``document`` again (a new version of its file, or a reindex), clearing any failure reason."""
    document.status = check_transition(document.status, DocumentStatus.QUEUED, requeue=True).value
    document.failure_reason = None


def requeue_for_reindex(*, session: Session, document: Document) -> None:
    """Queue ``document`` for a reindex; a conflict while its latest job is still running."""
    current = repo.latest_job(session=session, document_id=document.id)
    if current is not None and not DocumentStatus(current.status).terminal:
        raise AppError(ErrorCode.CONFLICT, "the document is already being indexed")
    requeue_document(session=session, document=document)


def create_job(*, session: Session, document: Document, trace_context: dict[str, Any] | None = None) -> IngestionJob:
    """A queued job for the document's current version, every stage pending."""
    job = IngestionJob(
        tenant_id=document.tenant_id,
        document_id=document.id,
        document_version=document.version,
        status=DocumentStatus.QUEUED.value,
        stages={stage.value: {"status": StageStatus.PENDING.value, "progress": 0.0} for stage in STAGES},
        trace_context=trace_context or {},
    )
    session.add(job)
    session.flush()
    return job


# --- the outbox -------------------------------------------------------------------------------------------------------


def lease_for_queue(db: Database, job_id: str, *, grace_s: float) -> None:
    """Before handing the job to the broker: push its lease forward so the sweeper does not re-send it while the task
    waits in the queue."""
    with db.session() as s:
        job = s.get(IngestionJob, job_id)
        if job is not None:
            job.lease_expires_at = utcnow() + dt.timedelta(seconds=grace_s)
            job.lease_owner = None


def mark_dispatched(db: Database, job_id: str, *, sent: bool) -> None:
    """Record whether the broker took the job; a job it did not take stays in the outbox for the next sweep."""
    with db.session() as s:
        job = s.get(IngestionJob, job_id)
        if job is None:
            return
        job.dispatched = sent
        if not sent:
            job.lease_expires_at = None


def release_unfinished(db: Database) -> int:
    """Put every job that is not finished back in the outbox with its lease dropped (embedded mode, at start: the
    process that held those jobs, or their in-memory queue, is gone), so the first sweep runs them at once instead of
    after their leases expire. Returns how many."""
    with db.session() as s:
        jobs = list(s.scalars(select(IngestionJob).where(IngestionJob.status.notin_(TERMINAL_STATUSES))))
        for job in jobs:
            job.dispatched = False
            job.lease_owner, job.lease_expires_at = None, None
        return len(jobs)


def sweep_stale(db: Database, *, max_attempts: int, failed: list[str] | None = None) -> list[str]:
    """Fail the stale jobs (outbox or expired lease) that used up their attempts (their document ids are appended to
    ``failed``); return the ids of the others, to be dispatched again, oldest first."""
    to_dispatch: list[str] = []
    with db.session() as s:
        for job in repo.list_stale_jobs(session=s):
            if job.attempts >= max_attempts:
                reason = f"gave up after {job.attempts} attempts: the worker stopped before finishing"
                if job.failure_reason:
                    reason += f" (last error: {job.failure_reason})"
                _set_job(job, DocumentStatus.FAILED, reason=reason)
                job.failure_reason, job.finished_at = reason, utcnow()
                job.lease_owner, job.lease_expires_at = None, None  # a worker still on it gets LeaseLost and stops
                _mirror(s, job, s.get(Document, job.document_id), status=DocumentStatus.FAILED, failure_reason=reason)
                if failed is not None:
                    failed.append(job.document_id)
                continue
            to_dispatch.append(job.id)
    return to_dispatch


# --- a worker takes a job ---------------------------------------------------------------------------------------------


def claim(*, session: Session, job_id: str, owner: str, lease_s: float, max_attempts: int) -> IngestionJob | None:
    """Take the lease of a job that is queued, or running with an expired lease. Returns None if another worker holds
    a live lease, the job is terminal, or it has used up its attempts."""
    now = utcnow()
    job = session.get(IngestionJob, job_id, with_for_update=True)
    if job is None or DocumentStatus(job.status).terminal:
        return None
    expires = as_utc(job.lease_expires_at) if job.lease_expires_at else None
    if job.lease_owner and expires and expires > now and job.lease_owner != owner:
        return None
    if job.attempts >= max_attempts:
        return None
    job.attempts += 1
    job.lease_owner = owner
    job.lease_expires_at = now + dt.timedelta(seconds=lease_s)
    session.flush()
    return job


@dataclass(frozen=True)
class Claim:
    """What a worker needs from the job it claimed."""

    document_id: str
    trace_context: dict[str, Any]
    attempt: int


def claim_job(db: Database, job_id: str, *, owner: str, lease_s: float, max_attempts: int) -> Claim | None:
    """:func:`claim` in its own transaction."""
    with db.session() as s:
        job = claim(session=s, job_id=job_id, owner=owner, lease_s=lease_s, max_attempts=max_attempts)
        if job is None:
            return None
        return Claim(document_id=job.document_id, trace_context=dict(job.trace_context or {}), attempt=job.attempts)


def job_status(db: Database, job_id: str) -> str:
    """The job's status, or :data:`MISSING`."""
    with db.session() as s:
        job = s.get(IngestionJob, job_id)
        return job.status if job else MISSING


# --- a worker runs a job ----------------------------------------------------------------------------------------------


class JobTracker:
    """Writes one job's stage transitions, each in its own short transaction (so progress is visible at once)."""

    def __init__(self, db: Database, job_id: str, *, owner: str | None = None, lease_s: float = 600.0) -> None:
        self.db = db
        self.job_id = job_id
        self.owner = owner
        self.lease_s = lease_s
        self.timings_ms: dict[str, float] = {}

    def _update(self, fn: Callable[[Session, IngestionJob, Document | None], None]) -> None:
        with self.db.session() as s:
            job = s.get(IngestionJob, self.job_id, with_for_update=self.owner is not None)
            if job is None:
                return
            if self.owner is not None:
                if job.lease_owner != self.owner:
                    raise LeaseLost(f"job {self.job_id} is now leased by {job.lease_owner or 'nobody'}")
                job.lease_expires_at = utcnow() + dt.timedelta(seconds=self.lease_s)
            doc = s.get(Document, job.document_id)
            fn(s, job, doc)

    @contextmanager
    def stage(self, which: DocumentStatus | str) -> Iterator[StageHandle]:
        stage = DocumentStatus(which)
        if not stage.is_stage:
            raise InvalidTransition(f"{stage.value} is not a pipeline stage")
        name = stage.value
        started = time.perf_counter()
        now = utcnow().isoformat()

        def begin(s: Session, job: IngestionJob, doc: Document | None) -> None:
            _set_job(job, stage)
            stages = dict(job.stages or {})
            stages[name] = {"status": StageStatus.RUNNING.value, "progress": 0.0, "started_at": now}
            job.stages = stages
            _mirror(s, job, doc, status=stage)

        self._update(begin)
        handle = StageHandle(self, name)
        with tracer().start_as_current_span(f"kbqa.ingest.{name}"):
            try:
                yield handle
            except BaseException:
                self._finish_stage(name, started, StageStatus.FAILED)
                raise
        self._finish_stage(name, started, StageStatus.DONE)

    def _finish_stage(self, name: str, started: float, status: StageStatus) -> None:
        duration = (time.perf_counter() - started) * 1000
        self.timings_ms[name] = duration

        def end(_s: Session, job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            entry = dict(stages.get(name, {}))
            entry.update(status=status.value, finished_at=utcnow().isoformat(), duration_ms=round(duration, 1))
            if status is StageStatus.DONE:
                entry["progress"] = 1.0
            stages[name] = entry
            job.stages = stages

        self._update(end)

    def annotate(self, name: str, **fields: Any) -> None:
        """Add ``fields`` (e.g. a parser's warnings, OCR'd pages) to stage ``name``'s entry, shown with the job."""

        def set_fields(_s: Session, job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            stages[name] = {**stages.get(name, {}), **fields}
            job.stages = stages

        self._update(set_fields)

    def progress(self, name: str, fraction: float, detail: str | None = None) -> None:
        def set_progress(_s: Session, job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            entry = dict(stages.get(name, {}))
            entry["progress"] = round(max(0.0, min(1.0, fraction)), 3)
            if detail is not None:
                entry["detail"] = detail
            stages[name] = entry
            job.stages = stages

        self._update(set_progress)

    def succeed(self, **doc_fields: Any) -> None:
        def done(s: Session, job: IngestionJob, doc: Document | None) -> None:
            _set_job(job, DocumentStatus.INDEXED)
            job.failure_reason = None
            job.finished_at = utcnow()
            job.lease_owner = None
            job.lease_expires_at = None
            _mirror(s, job, doc, status=DocumentStatus.INDEXED, failure_reason=None, **doc_fields)

        self._update(done)

    def fail(self, reason: str) -> None:
        mark_failed(self.db, self.job_id, reason, owner=self.owner)

    def retry_later(self, reason: str, delay_s: float) -> None:
        """Give the job back (status ``queued``, ``reason`` shown) for the sweeper to send again after ``delay_s``."""
        _settle(
            self.db,
            self.job_id,
            self.owner,
            DocumentStatus.QUEUED,
            job_fields={"failure_reason": reason, "lease_expires_at": utcnow() + dt.timedelta(seconds=delay_s)},
            doc_fields={"failure_reason": f"will retry in {delay_s:.0f} s: {reason}"},
        )


class StageHandle:
    def __init__(self, tracker: JobTracker, name: str) -> None:
        self._tracker = tracker
        self._name = name
        self._last = 0.0
        self._last_at = time.monotonic()

    def annotate(self, **fields: Any) -> None:
        self._tracker.annotate(self._name, **fields)

    def progress(self, fraction: float, detail: str | None = None) -> None:
        """Report progress (``detail``: e.g. "page 412 of 600"); writes are throttled to steps of at least 10%, or
        one every 30 s while progress moves (each write also renews the job's lease)."""
        now = time.monotonic()
        step = fraction - self._last
        if step >= 0.1 or fraction >= 1.0 or (step > 0 and now - self._last_at >= 30):
            self._last, self._last_at = fraction, now
            self._tracker.progress(self._name, fraction, detail)


def mark_failed(db: Database, job_id: str, reason: str, *, owner: str | None = None) -> None:
    """Fail the job (and its document, if this is the document's latest job). With ``owner``, only while that owner
    still holds the lease."""
    _settle(
        db,
        job_id,
        owner,
        DocumentStatus.FAILED,
        reason=reason,
        job_fields={"failure_reason": reason, "finished_at": utcnow(), "lease_expires_at": None},
        doc_fields={"failure_reason": reason},
    )


def _settle(
    db: Database,
    job_id: str,
    owner: str | None,
    target: DocumentStatus,
    *,
    reason: str | None = None,
    job_fields: dict[str, Any],
    doc_fields: dict[str, Any],
) -> None:
    """Release the job's lease, move it to ``target`` with ``job_fields``, and its document (``doc_fields``) if this
    is the document's latest job. With ``owner``, only while that owner still holds the lease."""
    with db.session() as s:
        job = s.get(IngestionJob, job_id, with_for_update=owner is not None)
        if job is None or (owner is not None and job.lease_owner != owner):
            return
        _set_job(job, target, reason=reason)
        job.lease_owner = None
        for name, value in job_fields.items():
            setattr(job, name, value)
        _mirror(s, job, s.get(Document, job.document_id), status=target, **doc_fields)
