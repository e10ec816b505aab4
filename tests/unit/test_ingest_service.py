"""Accepting uploads: dedupe by content, versioning by file name, size limit, the outbox, lease expiry and the attempt
limit — on a real SQLite database, with a Fake dispatcher standing in for the broker."""

from __future__ import annotations

import datetime as dt

import pytest

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.models import Document, IngestionJob, as_utc
from core.db.session import Database
from core.errors import AppError, ErrorCode
from ingestion import state
from ingestion.service import IngestService, sanitize_filename
from tests.fakes import (
    FakeDispatcher,
    FakeExtractor,
    FakeFlakyEmbedder,
    FakeIndexRemover,
    FakeLeaseStealingEmbedder,
    FakeRecordingIndex,
)

pytestmark = pytest.mark.unit


@pytest.fixture
def service(make_settings):
    settings = make_settings(ingestion={"max_upload_bytes": 1000, "max_attempts": 2, "lease_s": 60})
    migrate_database(settings)
    db = Database(settings.database_url)
    svc = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
    yield svc
    db.dispose()


def test_same_bytes_twice_make_one_document(service):
    a = service.submit(tenant_id="t", filename="guide.md", data=b"# Guide\n\nhello")
    b = service.submit(tenant_id="t", filename="copy-of-guide.md", data=b"# Guide\n\nhello")
    assert not a.duplicate and b.duplicate
    assert a.document.id == b.document.id
    assert len(service.dispatcher.sent) == 1
    with service.db.session() as s:
        assert len(repo.list_documents(session=s, tenant_id="t")) == 1


def test_same_bytes_in_another_tenant_are_separate(service):
    a = service.submit(tenant_id="t1", filename="g.md", data=b"# G\n\nx")
    b = service.submit(tenant_id="t2", filename="g.md", data=b"# G\n\nx")
    assert a.document.id != b.document.id and not b.duplicate


def test_new_content_under_same_name_is_a_new_version(service):
    a = service.submit(tenant_id="t", filename="policy.md", data=b"v1")
    b = service.submit(tenant_id="t", filename="policy.md", data=b"v2")
    assert b.document.id == a.document.id and b.document.version == 2
    with service.db.session() as s:
        jobs = s.query(IngestionJob).filter_by(document_id=a.document.id).all()
        assert sorted(j.document_version for j in jobs) == [1, 2]


def test_too_large_is_refused_with_413_code(service):
    with pytest.raises(AppError) as exc:
        service.submit(tenant_id="t", filename="big.txt", data=b"x" * 1001)
    assert exc.value.code == ErrorCode.PAYLOAD_TOO_LARGE and exc.value.http_status == 413


def test_upload_is_accepted_while_broker_is_down_and_sent_when_back(service):
    service.dispatcher.down = True
    sub = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\ntext")
    assert sub.document.status == "queued"
    with service.db.session() as s:
        job = repo.latest_job(session=s, document_id=sub.document.id)
        assert job.dispatched is False
    assert service.sweep() == 0  # still down: stays in the outbox
    service.dispatcher.down = False
    assert service.sweep() == 1
    with service.db.session() as s:
        job = repo.latest_job(session=s, document_id=sub.document.id)
        assert job.dispatched is True
        assert service.dispatcher.sent == [job.id]


def test_expired_lease_is_dispatched_again_then_fails_after_max_attempts(service):
    sub = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\ntext")
    for attempt in (1, 2):
        with service.db.session() as s:
            job = repo.latest_job(session=s, document_id=sub.document.id)
            claimed = state.claim(session=s, job_id=job.id, owner=f"w{attempt}", lease_s=60, max_attempts=2)
            assert claimed is not None and claimed.attempts == attempt
            claimed.status = "embedding"  # the worker died mid-job
            claimed.lease_expires_at = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
        if attempt == 1:
            assert service.sweep() == 1
    assert service.sweep() == 0
    with service.db.session() as s:
        doc = s.get(Document, sub.document.id)
        assert doc.status == "failed"
        assert "gave up after 2 attempts" in doc.failure_reason


def test_live_lease_is_not_stolen(service):
    sub = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\ntext")
    with service.db.session() as s:
        job = repo.latest_job(session=s, document_id=sub.document.id)
        assert state.claim(session=s, job_id=job.id, owner="w1", lease_s=60, max_attempts=3)
    with service.db.session() as s:
        assert state.claim(session=s, job_id=job.id, owner="w2", lease_s=60, max_attempts=3) is None
    assert service.sweep() == 0


def test_delete_removes_from_indexes_and_database(service):
    sub = service.submit(tenant_id="t", filename="a.md", data=b"# A\n\ntext")
    service.delete(tenant_id="t", document_id=sub.document.id)
    assert service.indexes.deleted == [sub.document.id]
    with service.db.session() as s:
        assert repo.list_documents(session=s, tenant_id="t") == []
    with pytest.raises(AppError) as exc:
        service.delete(tenant_id="t", document_id=sub.document.id)
    assert exc.value.code == ErrorCode.NOT_FOUND


def test_other_tenant_cannot_touch_a_document(service):
    sub = service.submit(tenant_id="t1", filename="a.md", data=b"secret")
    with pytest.raises(AppError) as exc:
        service.delete(tenant_id="t2", document_id=sub.document.id)
    assert exc.value.code == ErrorCode.NOT_FOUND


def test_reindex_while_running_is_a_conflict(service):
    sub = service.submit(tenant_id="t", filename="a.md", data=b"x")
    with pytest.raises(AppError) as exc:
        service.reindex(tenant_id="t", document_id=sub.document.id)
    assert exc.value.code == ErrorCode.CONFLICT


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\x\\report.pdf", "report.pdf"),
        ("", "upload"),
        ("a\x00b\x1f.txt", "ab.txt"),
        ("<script>.html", "_script_.html"),
        (".hidden", "hidden"),
    ],
)
def test_sanitize_filename(raw, expected):
    assert sanitize_filename(raw) == expected


def test_decompression_bomb_is_refused(service):
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"\0" * (60 * 1024 * 1024))
    data = buf.getvalue()
    assert len(data) < 200 * 1024
    service.settings.ingestion.max_upload_bytes = 10 * 1024 * 1024
    with pytest.raises(AppError) as exc:
        service.submit(tenant_id="t", filename="bomb.docx", data=data)
    assert exc.value.code == ErrorCode.VALIDATION and "bomb" in exc.value.message
    with service.db.session() as s:
        assert repo.list_documents(session=s, tenant_id="t") == []


# --- leases held by a running job ------------------------------------------------------------------------------------


def _submitted_job(service) -> str:  # noqa: ANN001
    doc = service.submit(tenant_id="t", filename="lease.md", data=b"# Lease\n\nSome text to index.").document
    with service.db.session() as s:
        return repo.latest_job(session=s, document_id=doc.id).id


def _claimed_job(service, owner: str = "w1", lease_s: float = 60):  # noqa: ANN001, ANN202
    job_id = _submitted_job(service)
    with service.db.session() as s:
        state.claim(session=s, job_id=job_id, owner=owner, lease_s=lease_s, max_attempts=3)
    return job_id


def _lease(service, job_id: str):  # noqa: ANN001, ANN202
    with service.db.session() as s:
        job = s.get(IngestionJob, job_id)
        return job.lease_owner, as_utc(job.lease_expires_at), job.status


def test_each_progress_write_renews_the_lease(service):
    from ingestion.state import JobTracker

    job_id = _claimed_job(service, lease_s=5)
    _, first_expiry, _ = _lease(service, job_id)
    tracker = JobTracker(service.db, job_id, owner="w1", lease_s=600)
    with tracker.stage("parsing"):
        pass
    owner, expiry, status = _lease(service, job_id)
    assert owner == "w1" and status == "parsing"
    assert expiry - first_expiry > dt.timedelta(seconds=500)


def test_a_worker_whose_lease_was_taken_stops_without_touching_the_job(service):
    from ingestion.state import JobTracker, LeaseLost

    job_id = _claimed_job(service)
    with service.db.session() as s:  # w1 stalled past its lease; the sweeper's re-dispatch let w2 claim the job
        s.get(IngestionJob, job_id).lease_owner = "w2"
    stalled = JobTracker(service.db, job_id, owner="w1")
    with pytest.raises(LeaseLost), stalled.stage("embedding"):
        pass
    stalled.fail("w1 must not be able to fail w2's job")
    owner, _, status = _lease(service, job_id)
    assert (owner, status) == ("w2", "queued")


def test_pipeline_leaves_a_job_whose_lease_was_taken_to_its_new_worker(service, tmp_path):
    from ingestion.pipeline import IngestPipeline
    from retrieval.indexes import Indexes

    job_id = _submitted_job(service)
    never = Indexes(keyword=None, vector=None, graph=None, lock_path=tmp_path / "lock")  # type: ignore[arg-type]
    pipeline = IngestPipeline(
        settings=service.settings,
        db=service.db,
        indexes=never,  # reaching the indexes would raise: the lease is lost before
        embedder=FakeLeaseStealingEmbedder(service.db, job_id),
        extractor=None,  # type: ignore[arg-type]
    )
    status = pipeline.run(job_id, owner="w1")
    owner, _, _ = _lease(service, job_id)
    assert status == "embedding" and owner == "w2"
    with service.db.session() as s:
        job = s.get(IngestionJob, job_id)
        assert job.failure_reason is None and job.stages["parsing"]["status"] == "done"


@pytest.fixture
def flaky(make_settings, tmp_path):  # noqa: ANN201
    """``make(**ingestion)``: a service with one submitted job and a pipeline whose first embedding call fails as if a
    service were down; returns (service, job id, recording index, pipeline)."""
    from ingestion.pipeline import IngestPipeline
    from retrieval.indexes import Indexes

    dbs: list[Database] = []

    def make(**ingestion):  # noqa: ANN003, ANN202
        settings = make_settings(ingestion=ingestion)
        migrate_database(settings)
        db = Database(settings.database_url)
        dbs.append(db)
        svc = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
        idx = FakeRecordingIndex()
        pipeline = IngestPipeline(
            settings=settings,
            db=db,
            indexes=Indexes(keyword=idx, vector=idx, graph=idx, lock_path=tmp_path / "lock"),  # type: ignore[arg-type]
            embedder=FakeFlakyEmbedder(),
            extractor=FakeExtractor(),
        )
        return svc, _submitted_job(svc), idx, pipeline

    yield make
    for db in dbs:
        db.dispose()


def test_a_job_that_meets_an_unavailable_service_is_retried_later_not_failed(flaky):
    import time

    svc, job_id, idx, pipeline = flaky(max_attempts=3, retry_backoff_s=0.05)
    db, dispatcher = svc.db, svc.dispatcher
    assert pipeline.run(job_id, owner="w1") == "queued"
    with db.session() as s:
        job = s.get(IngestionJob, job_id)
        doc = s.get(Document, job.document_id)
        assert (job.attempts, job.lease_owner) == (1, None)
        assert doc.status == "queued" and doc.failure_reason.startswith("will retry in 0 s: vector index unavailable")
    dispatcher.sent.clear()
    time.sleep(0.1)
    assert svc.sweep() == 1 and dispatcher.sent == [job_id]
    assert pipeline.run(job_id, owner="w2") == "indexed"
    with db.session() as s:
        job = s.get(IngestionJob, job_id)
        assert job.attempts == 2 and s.get(Document, job.document_id).failure_reason is None
    assert idx.upserts  # written on the second attempt


def test_a_service_down_through_every_attempt_fails_with_the_reason(flaky):
    svc, job_id, _, pipeline = flaky(max_attempts=1)
    assert pipeline.run(job_id, owner="w1") == "failed"
    with svc.db.session() as s:
        doc = s.get(Document, s.get(IngestionJob, job_id).document_id)
        assert doc.failure_reason == "vector index unavailable: connection refused (gave up after 1 attempts)"


def test_without_a_graph_no_entities_are_extracted(make_settings, tmp_path) -> None:  # noqa: ANN001
    """``index.graph_backend=none`` (the default): the pipeline indexes the document and never calls the extractor
    (so the spaCy model is never loaded)."""
    from ingestion.pipeline import IngestPipeline
    from retrieval.indexes import Indexes
    from retrieval.null import NullGraphIndex
    from tests.fakes import FakeEmbedder

    class CountingExtractor(FakeExtractor):
        calls = 0

        def extract(self, texts):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN202
            CountingExtractor.calls += 1
            return super().extract(texts)

    settings = make_settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    try:
        svc = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover())
        idx = FakeRecordingIndex()
        for graph, calls in ((NullGraphIndex(), 0), (idx, 1)):
            pipeline = IngestPipeline(
                settings=settings, db=db, embedder=FakeEmbedder(), extractor=CountingExtractor(),
                indexes=Indexes(keyword=idx, vector=idx, graph=graph, lock_path=tmp_path / "lock"),  # type: ignore[arg-type]
            )
            doc = svc.submit(tenant_id="t", filename=f"g{calls}.md", data=f"# G\n\nText {calls} to index.".encode())
            with db.session() as s:
                job_id = repo.latest_job(session=s, document_id=doc.document.id).id
            assert pipeline.run(job_id, owner="w1") == "indexed"
            assert CountingExtractor.calls == calls
    finally:
        db.dispose()
