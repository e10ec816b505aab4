"""W3C trace context flows from the upload request into the ingestion job's spans."""

from __future__ import annotations

import os

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.session import Database
from core.tracing import configure_tracing, tracer
from ingestion.service import IngestService
from ingestion.state import JobTracker
from tests.fakes import FakeDispatcher

pytestmark = pytest.mark.unit


def test_job_continues_the_upload_trace(make_settings):
    exporter = InMemorySpanExporter()
    configure_tracing("kbqa-test", extra_processor=SimpleSpanProcessor(exporter))
    settings = make_settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    svc = IngestService(settings=settings, db=db, dispatcher=FakeDispatcher(), indexes=None)
    with tracer().start_as_current_span("POST /api/v1/documents") as request_span:
        sub = svc.submit(tenant_id="t", filename="a.md", data=b"# A\n\nx")
    with db.session() as s:
        job = repo.latest_job(session=s, document_id=sub.document.id)
        carrier = dict(job.trace_context)
    assert carrier["traceparent"].split("-")[1] == format(request_span.get_span_context().trace_id, "032x")

    # what a worker does: continue the stored context, one span per stage
    from core.tracing import extract

    with (
        tracer().start_as_current_span("kbqa.ingest", context=extract(carrier)),
        JobTracker(db, job.id).stage("parsing"),
    ):
        pass
    spans = {s.name: s for s in exporter.get_finished_spans()}
    trace_id = request_span.get_span_context().trace_id
    assert spans["kbqa.ingest"].context.trace_id == trace_id
    assert spans["kbqa.ingest.parsing"].context.trace_id == trace_id
    assert spans["kbqa.ingest"].parent.span_id == request_span.get_span_context().span_id
    assert spans["kbqa.ingest"].resource.attributes["process.pid"] == os.getpid()  # tells pool children apart
    db.dispose()
