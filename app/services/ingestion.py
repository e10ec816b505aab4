"""Ingestion figures for operators (metrics)."""

from __future__ import annotations

import logging

from core.db import repositories as repo
from core.db.session import Database

log = logging.getLogger(__name__)


def jobs_by_status(*, db: Database) -> dict[str, int] | None:
    """Ingestion jobs per status over all tenants; ``None`` when the database is down (metrics must not fail)."""
    try:
        with db.session() as s:
            return repo.count_jobs_by_status(session=s)
    except Exception:  # noqa: BLE001 - metrics must not fail because the DB is down
        log.debug("job counts unavailable", exc_info=True)
        return None
