"""Ingestion as the API process sees it: figures for operators (metrics) and recovery after a restart."""

from __future__ import annotations

import logging

from core.db import repositories as repo
from core.db.session import Database
from ingestion import state
from retrieval.protocols import ChunkStore

log = logging.getLogger(__name__)


def jobs_by_status(*, db: Database) -> dict[str, int] | None:
    """Ingestion jobs per status over all tenants; ``None`` when the database is down (metrics must not fail)."""
    try:
        with db.session() as s:
            return repo.count_jobs_by_status(session=s)
    except Exception:  # noqa: BLE001 - metrics must not fail because the DB is down
        log.debug("job counts unavailable", exc_info=True)
        return None


def recover_after_restart(*, db: Database) -> int:
    """Embedded mode, at start: jobs left unfinished by the previous process (queued in its memory, or running when
    it stopped) go back to the outbox at once, so the first sweep runs them instead of waiting for their leases to
    expire. Only for the in-process executor: Celery workers keep their own leases."""
    n = state.release_unfinished(db)
    if n:
        log.info("re-queued %d ingestion jobs left unfinished by the previous run", n)
    return n


#: Chunks written per bulk call when an index is rebuilt from the database (whole documents only).
REBUILD_BATCH = 500


def rebuild_legacy_keyword_index(*, db: Database, chunk_store: ChunkStore, keyword: object) -> int:
    """The embedded BM25 index keeps one index per tenant (its own term statistics). An index directory from before
    that holds one shared index, which is no longer read: rebuild the per-tenant indexes from the chunks stored in the
    database (the source of truth), whole documents at a time, then remove the shared index. Returns the chunks
    written (0 when there is nothing to do)."""
    if not getattr(keyword, "has_legacy_shared_index", False):
        return 0
    with db.session() as s:
        pairs = repo.chunk_ids_by_document(session=s)
    written = 0
    batch: list[tuple[str, list[str]]] = []
    size = 0

    def flush() -> None:
        nonlocal written, size
        if not batch:
            return
        records = chunk_store.get_many([c for _, ids in batch for c in ids])
        docs = [(doc_id, [records[c] for c in ids if c in records]) for doc_id, ids in batch]
        keyword.upsert_many(docs)  # type: ignore[attr-defined]
        written += sum(len(chunks) for _, chunks in docs)
        batch.clear()
        size = 0

    for doc_id, chunk_id in pairs:
        if not batch or batch[-1][0] != doc_id:
            if size >= REBUILD_BATCH:
                flush()
            batch.append((doc_id, []))
        batch[-1][1].append(chunk_id)
        size += 1
    flush()
    keyword.retire_legacy_shared_index()  # type: ignore[attr-defined]
    log.info("rebuilt the keyword index per tenant from %d stored chunks", written)
    return written
