"""The ingest pipeline: parse > chunk > embed > index, for one job. The same code runs in-process (embedded mode) and
inside a Celery task (distributed mode).

Failure policy: a file the parsers reject (``AppError(PARSE_FAILED)``) fails at once with the parser's reason; any
other error fails the job with a readable one-line reason (exception type and message, never a traceback). A worker
that dies mid-job leaves the lease to expire; the sweeper re-dispatches it until ``max_attempts``. A long PDF is parsed
in saved page-range parts (``ingestion.parsing.parts``), so the next attempt parses only the pages no saved part holds;
the parts are deleted once the document is indexed or fails.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Protocol

import numpy as np

from core.db import repositories as repo
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.filestore import FileStore, build_file_store
from core.settings import Settings
from core.tracing import extract, tracer
from core.types import ChunkRecord, DocumentStatus
from ingestion import state
from ingestion.parsing.parts import RunPart, delete_parts
from ingestion.state import JobTracker, LeaseLost
from retrieval.indexes import Indexes
from retrieval.null import is_disabled
from retrieval.protocols import Embedder
from retrieval.sentences import chunk_sentences, pack, per_chunk_rows

log = logging.getLogger(__name__)


class EntityExtractorLike(Protocol):  # pragma: no cover - structural type only
    def extract(self, texts: Sequence[str]) -> list[list[str]]: ...


_TRANSIENT = (ErrorCode.INDEX_UNAVAILABLE, ErrorCode.DEPENDENCY_UNAVAILABLE)


def is_transient(exc: BaseException) -> bool:
    """A failure of a service the job needs (an index server, say), not of the document: worth another attempt."""
    return isinstance(exc, AppError) and exc.code in _TRANSIENT


def readable_reason(exc: BaseException) -> str:
    if isinstance(exc, AppError) and exc.message.strip():
        return exc.message
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"internal error ({type(exc).__name__}){': ' + text[:300] if text else ''}"


class IngestPipeline:
    def __init__(
        self,
        *,
        settings: Settings,
        db: Database,
        indexes: Indexes,
        embedder: Embedder,
        extractor: EntityExtractorLike,
        files: FileStore | None = None,
    ) -> None:
        self.settings = settings
        self.db = db
        self.indexes = indexes
        self.embedder = embedder
        self.extractor = extractor
        self.files = files if files is not None else build_file_store(settings)
        #: Runs one part of a parse (None: an isolated child); unit tests pass a fake.
        self.run_part: RunPart | None = None

    def run(self, job_id: str, *, owner: str | None = None) -> str:
        """Run one job to a terminal state (or leave it for retry if this process could not take its lease).
        Returns the job status afterwards."""
        owner = owner or f"{os.uname().nodename}:{os.getpid()}:{threading.get_ident()}"
        cfg = self.settings.ingestion
        claim = state.claim_job(self.db, job_id, owner=owner, lease_s=cfg.lease_s, max_attempts=cfg.max_attempts)
        if claim is None:
            return state.job_status(self.db, job_id)
        document_id, trace_context, attempt = claim.document_id, claim.trace_context, claim.attempt
        tracker = JobTracker(self.db, job_id, owner=owner, lease_s=cfg.lease_s)
        with tracer().start_as_current_span(
            "kbqa.ingest",
            context=extract(trace_context),
            attributes={"kbqa.job_id": job_id, "kbqa.document_id": document_id, "kbqa.attempt": attempt},
        ) as span:
            try:
                self._process(tracker, document_id)
            except LeaseLost as exc:
                log.warning("ingest job %s: lease lost, leaving the job to its new worker (%s)", job_id, exc)
                span.set_attribute("kbqa.lease_lost", True)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a readable reason
                reason = readable_reason(exc)
                span.set_attribute("kbqa.failure_reason", reason)
                transient = is_transient(exc)
                if transient and attempt < cfg.max_attempts:
                    delay = cfg.retry_backoff_s * 2 ** (attempt - 1)
                    log.warning("ingest job %s attempt %d: %s; retrying in %.0f s", job_id, attempt, reason, delay)
                    tracker.retry_later(reason, delay)
                else:
                    log.warning("ingest job %s failed: %s", job_id, reason, exc_info=not isinstance(exc, AppError))
                    if transient:
                        reason = f"{reason} (gave up after {attempt} attempts)"
                    tracker.fail(reason)
                    delete_parts(self.files, document_id)  # a retry by hand starts afresh
        return state.job_status(self.db, job_id)

    def _process(self, tracker: JobTracker, document_id: str) -> None:
        from ingestion.chunking import CHUNKER_VERSION, chunk_elements
        from ingestion.parsing import ParseOptions
        from ingestion.parsing.parts import FilePartStore, file_digest, parse_in_parts

        cfg = self.settings.ingestion
        with self.db.session() as s:
            doc = repo.find_document(session=s, document_id=document_id)
            if doc is None:
                raise AppError(ErrorCode.NOT_FOUND, "document was deleted before it could be indexed")
            storage_key, filename = doc.storage_path, doc.filename
            tenant_id, version = doc.tenant_id, doc.version
            acl, tags, created_at = tuple(doc.acl_groups or ()), tuple(doc.tags or ()), doc.created_at

        with tracker.stage(DocumentStatus.PARSING) as stage, self._original(storage_key) as path:
            options = ParseOptions(
                ocr_languages=cfg.ocr_languages,
                max_pages=cfg.parse_max_pages,
                convert_timeout_s=cfg.convert_timeout_s,
                max_total_s=cfg.parse_max_s,
                warm_spares=cfg.parse_warm_spares,
            )
            digest, size = file_digest(path)
            store = FilePartStore(
                self.files,
                document_id=document_id,
                version=version,
                digest=digest,
                size=size,
                part_pages=cfg.parse_part_pages,
            )
            parsed = parse_in_parts(
                path,
                filename=filename,
                part_pages=cfg.parse_part_pages,
                timeout_s=cfg.parse_timeout_s,
                memory_mb=cfg.parse_memory_mb,
                options=options,
                store=store,
                on_progress=lambda done, total: stage.progress(done / total if total else 0.0, f"{done} of {total}"),
                on_part=lambda parts: stage.annotate(**parts.notes()),  # each write also checks the lease
                run_part=self.run_part,
            )
            notes: dict[str, object] = {}
            if parsed.warnings:
                notes["warnings"] = parsed.warnings[:20]
            if parsed.ocr_confidence:
                notes["ocr_pages"] = len(parsed.ocr_confidence)
                notes["ocr_confidence"] = {str(p): c for p, c in sorted(parsed.ocr_confidence.items())}
            if notes:
                stage.annotate(**notes)
        title = (parsed.title or "").strip() or Path(filename).stem

        with tracker.stage(DocumentStatus.CHUNKING):
            drafts = chunk_elements(
                parsed.elements,
                count_tokens=self.embedder.count_tokens,
                target_tokens=cfg.chunk_target_tokens,
                overlap_tokens=cfg.chunk_overlap_tokens,
                table_max_tokens=cfg.table_max_tokens,
            )
            if not drafts:
                raise AppError(ErrorCode.PARSE_FAILED, "no text could be extracted from the document")
            chunks = [
                ChunkRecord(
                    id=ChunkRecord.make_id(tenant_id, document_id, version, d.order, d.text),
                    tenant_id=tenant_id,
                    document_id=document_id,
                    document_version=version,
                    title=title,
                    text=d.text,
                    section_path=tuple(d.section_path),
                    page_start=d.page_start,
                    page_end=d.page_end,
                    order=d.order,
                    element_types=tuple(d.element_types),
                    token_count=d.token_count,
                    chunker_version=CHUNKER_VERSION,
                    acl_groups=acl,
                    doc_type=parsed.doc_type,
                    tags=tags,
                    created_at=created_at,
                )
                for d in drafts
            ]

        with tracker.stage(DocumentStatus.EMBEDDING) as stage:
            if self.settings.ingestion.sentence_vectors:
                per_chunk = [chunk_sentences(c.text) for c in chunks]
                flat = [sentence for sentences in per_chunk for sentence in sentences]
                both = self._embed([c.text for c in chunks] + flat, stage.progress)
                vectors = both[: len(chunks)]
                sentence_vectors: list[bytes | None] = [
                    pack(rows) if len(rows) else None for rows in per_chunk_rows(both[len(chunks) :], per_chunk)
                ]
            else:
                vectors = self._embed([c.text for c in chunks], stage.progress)
                sentence_vectors = [None] * len(chunks)

        with tracker.stage(DocumentStatus.INDEXING):
            # no graph, no entity extraction (the spaCy model is never loaded)
            entities = [[] for _ in chunks] if is_disabled(self.indexes.graph) else self.extractor.extract(
                [c.text for c in chunks])
            with self.db.session() as s:
                doc = repo.find_document(session=s, document_id=document_id)
                if doc is None:
                    raise AppError(ErrorCode.NOT_FOUND, "document was deleted while it was being indexed")
                self.indexes.upsert(document_id, chunks, vectors, entities, session=s)
                repo.replace_chunks(
                    session=s, document=doc, chunks=chunks, embedder_version=self.embedder.model_version,
                    sentence_vectors=sentence_vectors,
                )
                doc.title = title
                doc.mime_type = parsed.mime_type
                doc.doc_type = parsed.doc_type
                doc.page_count = parsed.page_count
                doc.chunker_version = CHUNKER_VERSION
                doc.embedder_version = f"{self.embedder.model_name}@{self.embedder.model_version}"
        tracker.succeed()
        delete_parts(self.files, document_id)

    @contextmanager
    def _original(self, key: str) -> Iterator[Path]:
        """The uploaded file as a local path for the parsers (a temporary copy when it lives in object storage)."""
        stack = ExitStack()
        try:
            path = stack.enter_context(self.files.local_path(key))
        except AppError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                raise AppError(ErrorCode.PARSE_FAILED, "the uploaded file is missing from storage") from exc
            raise
        with stack:
            yield path

    def _embed(self, texts: list[str], progress: object) -> np.ndarray:
        batch = self.settings.embedding.batch_size
        parts: list[np.ndarray] = []
        started = time.perf_counter()
        for i in range(0, len(texts), batch):
            parts.append(self.embedder.embed_documents(texts[i : i + batch]))
            progress(min(1.0, (i + batch) / len(texts)))  # type: ignore[operator]
        log.debug("embedded %d chunks in %.2fs", len(texts), time.perf_counter() - started)
        return np.vstack(parts).astype(np.float32) if parts else np.zeros((0, self.embedder.dim), np.float32)
