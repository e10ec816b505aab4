"""Ingestion as the API process sees it: figures for operators (metrics) and recovery after a restart."""

from __future__ import annotations

import logging

from core.db import repositories as repo
from core.db.session import Database
from ingestion import state

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
