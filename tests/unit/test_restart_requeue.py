"""Embedded mode after a restart: unfinished jobs go back to the outbox at once (not after their 600 s lease)."""

import datetime as dt

import pytest

from app.cli import migrate_database
from app.services.ingestion import recover_after_restart
from core.db import repositories as repo
from core.db.models import IngestionJob, utcnow
from core.db.session import Database
from ingestion import state

pytestmark = pytest.mark.unit


def test_unfinished_jobs_are_requeued_and_finished_ones_left_alone(make_settings):
    settings = make_settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    states = {"queued": False, "embedding": True, "indexed": False, "failed": False}
    ids = {}
    with db.session() as s:
        for i, (status, leased) in enumerate(states.items()):
            doc = repo.create_document(
                session=s, tenant_id="t1", filename=f"f{i}.txt", title=f"f{i}", content_hash=f"h{i}",
                storage_path=f"/tmp/f{i}",
            )
            job = state.create_job(session=s, document=doc)
            job.status, job.dispatched = status, True
            if leased:  # the previous process was embedding it when it was killed
                job.lease_owner = "host:12345:1"
                job.lease_expires_at = utcnow() + dt.timedelta(seconds=600)
                job.attempts = 1
            ids[status] = job.id
    assert recover_after_restart(db=db) == 2
    with db.session() as s:
        stale = {j.id for j in repo.list_stale_jobs(session=s)}
        assert stale == {ids["queued"], ids["embedding"]}
        running = s.get(IngestionJob, ids["embedding"])
        assert running.lease_owner is None and running.lease_expires_at is None and running.attempts == 1
        assert s.get(IngestionJob, ids["indexed"]).dispatched is True
    assert recover_after_restart(db=db) == 2  # idempotent: the same two, nothing else
    db.dispose()
