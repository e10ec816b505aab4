"""Distributed ingestion on real parts: a real Celery worker process, the real Redis broker and a real PostgreSQL
database. Includes killing the worker mid-job: the job still reaches a terminal state, with no duplicate chunks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.session import Database
from core.settings import Settings
from ingestion.celery_app import ingest_queue
from ingestion.executors import CeleryDispatcher
from ingestion.service import IngestService

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


class NoIndexes:
    def delete(self, document_id: str, *, session: object = None) -> None:  # deletion is not exercised here
        raise AssertionError("not expected")


@pytest.fixture
def distributed(tmp_path, pg_url, redis_url):
    import redis

    redis.Redis.from_url(redis_url).flushdb()
    env = {
        **os.environ,
        "KBQA_DATA_DIR": str(tmp_path / "data"),
        "KBQA_DATABASE__URL": pg_url,
        "KBQA_INGESTION__EXECUTOR": "celery",
        "KBQA_INGESTION__BROKER_URL": redis_url,
        "KBQA_INGESTION__LEASE_S": "8",
        "KBQA_INGESTION__MAX_ATTEMPTS": "3",
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        database={"url": pg_url},
        ingestion={"executor": "celery", "broker_url": redis_url, "lease_s": 8, "max_attempts": 3},
    )
    migrate_database(settings)
    db = Database(pg_url)
    with db.session() as s:
        for tenant in ("acme", "globex"):
            repo.get_or_create_tenant(session=s, tenant_id=tenant)
    dispatcher = CeleryDispatcher(settings, tenant_of=lambda job_id: _job_tenant(db, job_id))
    service = IngestService(settings=settings, db=db, dispatcher=dispatcher, indexes=NoIndexes())
    workers: list[subprocess.Popen] = []

    def start_worker() -> subprocess.Popen:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1", "--loglevel", "WARNING"],
            cwd=REPO,
            env=env,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        workers.append(proc)
        return proc

    yield service, db, start_worker
    for proc in workers:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
    db.dispose()


def _job_tenant(db: Database, job_id: str) -> str:
    with db.session() as s:
        return repo.job_tenant(session=s, job_id=job_id)


def wait_for(db: Database, document_id: str, states: set[str], timeout: float, *, tenant_id: str = "default") -> str:
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        with db.session() as s:
            status = repo.get_document(session=s, tenant_id=tenant_id, document_id=document_id).status
        if status in states:
            return status
        time.sleep(0.3)
    raise AssertionError(f"document stuck in {status!r}, expected one of {states}")


def test_worker_indexes_and_fails_with_reasons(distributed):
    service, db, start_worker = distributed
    start_worker()
    good = service.submit(tenant_id="default", filename="faq.md", data=(REPO / "demo/kb/faq.md").read_bytes())
    empty = service.submit(tenant_id="default", filename="empty.txt", data=b"")
    assert wait_for(db, good.document.id, {"indexed", "failed"}, 240) == "indexed"
    assert wait_for(db, empty.document.id, {"indexed", "failed"}, 60) == "failed"
    with db.session() as s:
        bad = repo.get_document(session=s, tenant_id="default", document_id=empty.document.id)
        assert bad.failure_reason and "Traceback" not in bad.failure_reason
        assert repo.get_document(session=s, tenant_id="default", document_id=good.document.id).chunk_count > 0


def test_killed_worker_job_still_finishes_without_duplicates(distributed):
    service, db, start_worker = distributed
    body = "\n\n".join(
        f"## Section {i}\n\nParagraph {i} explains how the Kestrel unit number {i} pairs with hub model {i * 7}. "
        f"It covers the LED pattern, the reset button and firmware channel {i % 5}."
        for i in range(300)
    )
    first = start_worker()
    doc = service.submit(tenant_id="default", filename="long.md", data=("# Long guide\n\n" + body).encode()).document
    wait_for(db, doc.id, {"chunking", "embedding", "indexing"}, 240)
    os.killpg(first.pid, signal.SIGKILL)  # the worker dies mid-job
    first.wait(timeout=10)
    start_worker()
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        service.sweep()  # the API's sweeper: re-dispatch jobs whose lease expired
        with db.session() as s:
            status = repo.get_document(session=s, tenant_id="default", document_id=doc.id).status
        if status in ("indexed", "failed"):
            break
        time.sleep(1)
    with db.session() as s:
        d = repo.get_document(session=s, tenant_id="default", document_id=doc.id)
        job = repo.latest_job(session=s, document_id=doc.id)
        chunks = repo.list_chunks(session=s, document_id=doc.id)
        assert d.status == "indexed", d.failure_reason
        assert job.attempts >= 2
        assert len(chunks) == len({c.id for c in chunks}) == d.chunk_count
        assert len({c.order for c in chunks}) == len(chunks)


def test_another_tenants_upload_overtakes_a_backlog(distributed):
    """Tenant acme queues 8 documents, then tenant globex one: one worker process takes the tenants' queues in turn,
    so globex's document is among the first two jobs, not the ninth (one shared queue ran it last)."""
    service, db, start_worker = distributed
    queues = Settings().ingestion.tenant_queues
    assert ingest_queue("acme", queues) != ingest_queue("globex", queues), "the test needs two different queues"
    faq = (REPO / "demo/kb/faq.md").read_bytes()
    backlog = [
        service.submit(tenant_id="acme", filename=f"faq-{i}.md", data=faq + f"\n\nCopy {i}.\n".encode()).document
        for i in range(8)
    ]
    small = service.submit(tenant_id="globex", filename="hello.md", data=b"# Hello\n\nGlobex opens at nine.\n").document
    start_worker()  # every job is queued before the worker takes the first
    assert wait_for(db, small.id, {"indexed", "failed"}, 240, tenant_id="globex") == "indexed"
    with db.session() as s:
        done = [repo.latest_job(session=s, document_id=d.id) for d in backlog]
        small_job = repo.latest_job(session=s, document_id=small.id)
        before = [j for j in done if j.finished_at is not None and j.finished_at <= small_job.finished_at]
    assert len(before) <= 1, f"{len(before)} of acme's backlog ran before globex's upload"
    for d in backlog:  # and the backlog still drains
        assert wait_for(db, d.id, {"indexed", "failed"}, 300, tenant_id="acme") == "indexed"
