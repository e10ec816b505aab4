"""Job state in the database: queued > parsing > chunking > embedding > indexing > indexed | failed(reason).

Each stage records status, progress (0..1), start, finish and duration. The document row mirrors the job's status so
listings need no join.

Leases: a tracker that knows its ``owner`` renews the job's lease with every write (stage start, progress, finish),
so a long job keeps its lease while it shows signs of life, and a dead worker's lease still expires ``lease_s`` after
its last write. If the lease has meanwhile gone to another worker (this one stalled past its lease), the next write
raises ``LeaseLost`` and this worker stops without touching the job, which now belongs to the other.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from core.db import repositories as repo
from core.db.models import Document, IngestionJob, utcnow
from core.db.session import Database
from core.tracing import tracer


class LeaseLost(Exception):
    """Another worker took this job's lease after it expired; this worker must stop working on it."""


class JobTracker:
    """Writes one job's stage transitions, each in its own short transaction (so progress is visible at once)."""

    def __init__(self, db: Database, job_id: str, *, owner: str | None = None, lease_s: float = 600.0) -> None:
        self.db = db
        self.job_id = job_id
        self.owner = owner
        self.lease_s = lease_s
        self.timings_ms: dict[str, float] = {}

    def _update(self, fn: Any) -> None:
        with self.db.session() as s:
            job = s.get(IngestionJob, self.job_id, with_for_update=self.owner is not None)
            if job is None:
                return
            if self.owner is not None:
                if job.lease_owner != self.owner:
                    raise LeaseLost(f"job {self.job_id} is now leased by {job.lease_owner or 'nobody'}")
                job.lease_expires_at = utcnow() + dt.timedelta(seconds=self.lease_s)
            doc = s.get(Document, job.document_id)
            fn(job, doc)

    @contextmanager
    def stage(self, name: str) -> Iterator[StageHandle]:
        started = time.perf_counter()
        now = utcnow().isoformat()

        def begin(job: IngestionJob, doc: Document | None) -> None:
            stages = dict(job.stages or {})
            stages[name] = {"status": "running", "progress": 0.0, "started_at": now}
            job.stages = stages
            job.status = name
            if doc is not None:
                doc.status = name

        self._update(begin)
        handle = StageHandle(self, name)
        with tracer().start_as_current_span(f"kbqa.ingest.{name}"):
            try:
                yield handle
            except BaseException:
                self._finish_stage(name, started, "failed")
                raise
        self._finish_stage(name, started, "done")

    def _finish_stage(self, name: str, started: float, status: str) -> None:
        duration = (time.perf_counter() - started) * 1000
        self.timings_ms[name] = duration

        def end(job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            entry = dict(stages.get(name, {}))
            entry.update(status=status, finished_at=utcnow().isoformat(), duration_ms=round(duration, 1))
            if status == "done":
                entry["progress"] = 1.0
            stages[name] = entry
            job.stages = stages

        self._update(end)

    def annotate(self, name: str, **fields: Any) -> None:
        """Add ``fields`` (e.g. a parser's warnings, OCR'd pages) to stage ``name``'s entry, shown with the job."""

        def set_fields(job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            stages[name] = {**stages.get(name, {}), **fields}
            job.stages = stages

        self._update(set_fields)

    def progress(self, name: str, fraction: float, detail: str | None = None) -> None:
        def set_progress(job: IngestionJob, _doc: Document | None) -> None:
            stages = dict(job.stages or {})
            entry = dict(stages.get(name, {}))
            entry["progress"] = round(max(0.0, min(1.0, fraction)), 3)
            if detail is not None:
                entry["detail"] = detail
            stages[name] = entry
            job.stages = stages

        self._update(set_progress)

    def succeed(self, **doc_fields: Any) -> None:
        def done(job: IngestionJob, doc: Document | None) -> None:
            job.status = "indexed"
            job.failure_reason = None
            job.finished_at = utcnow()
            job.lease_owner = None
            job.lease_expires_at = None
            if doc is not None:
                doc.status = "indexed"
                doc.failure_reason = None
                for k, v in doc_fields.items():
                    setattr(doc, k, v)

        self._update(done)

    def fail(self, reason: str) -> None:
        mark_failed(self.db, self.job_id, reason, owner=self.owner)

    def retry_later(self, reason: str, delay_s: float) -> None:
        """Give the job back (status ``queued``, ``reason`` shown) for the sweeper to send again after ``delay_s``."""
        _settle(
            self.db,
            self.job_id,
            self.owner,
            job_fields={
                "status": "queued",
                "failure_reason": reason,
                "lease_expires_at": utcnow() + dt.timedelta(seconds=delay_s),
            },
            doc_fields={"status": "queued", "failure_reason": f"will retry in {delay_s:.0f} s: {reason}"},
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
        job_fields={"status": "failed", "failure_reason": reason, "finished_at": utcnow(), "lease_expires_at": None},
        doc_fields={"status": "failed", "failure_reason": reason},
    )


def _settle(
    db: Database, job_id: str, owner: str | None, *, job_fields: dict[str, Any], doc_fields: dict[str, Any]
) -> None:
    """Release the job's lease and set ``job_fields`` on it, and ``doc_fields`` on its document if this is the
    document's latest job. With ``owner``, only while that owner still holds the lease."""
    with db.session() as s:
        job = s.get(IngestionJob, job_id, with_for_update=owner is not None)
        if job is None or (owner is not None and job.lease_owner != owner):
            return
        job.lease_owner = None
        for name, value in job_fields.items():
            setattr(job, name, value)
        doc = s.get(Document, job.document_id)
        if doc is not None and repo.latest_job(session=s, document_id=doc.id) is job:
            for name, value in doc_fields.items():
                setattr(doc, name, value)
