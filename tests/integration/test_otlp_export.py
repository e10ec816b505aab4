"""Traces reach a real OTLP/HTTP receiver from two real processes: a ``kbqa serve`` API and a ``kbqa worker`` Celery
worker, on PostgreSQL and the Redis broker. One upload is one trace: the worker's ingestion spans continue the upload
request's trace under the request's server span, and both processes export SQLAlchemy spans.

The API exports every 200 ms (``OTEL_BSP_SCHEDULE_DELAY``); the worker keeps the default 5 s delay and is stopped right
after the job, so its last spans arrive only if the pool child flushes them on its way out (it exits by ``os._exit``).
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.session import Database
from core.settings import Settings
from core.types import Role
from tests.servers import free_port, wait_ready

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOC = b"# Kestrel Hub\n\n## Warranty\n\nThe Kestrel Hub has a 24-month warranty from the date of purchase.\n"


@dataclass(frozen=True)
class Span:
    service: str
    pid: int
    scope: str
    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]


def _value(v: AnyValue) -> Any:
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind else None


class Collector:
    """An OTLP/HTTP traces receiver (protobuf) on a free local port; keeps every span it was sent."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                encoding = self.headers.get("Content-Encoding", "")
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    self.send_error(404 if self.path != "/v1/traces" else 415)
                    return
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector.add(request)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}/v1/traces"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def add(self, request: ExportTraceServiceRequest) -> None:
        got = []
        for rs in request.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        Span(
                            service=str(resource.get("service.name")),
                            pid=int(resource.get("process.pid", -1)),
                            scope=ss.scope.name,
                            name=s.name,
                            kind=s.kind,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in s.attributes},
                        )
                    )
        with self._lock:
            self.requests += 1
            self.spans.extend(got)

    def snapshot(self) -> list[Span]:
        with self._lock:
            return list(self.spans)

    def wait_for(self, what: str, found: Callable[[list[Span]], bool], timeout: float) -> list[Span]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            spans = self.snapshot()
            if found(spans):
                return spans
            time.sleep(0.1)
        raise AssertionError(
            f"{what}: not at the collector after {timeout}s; got {sorted({(s.name, s.service, s.pid) for s in spans})}"
        )

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _stop(proc: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """SIGTERM to the main process (a Celery worker then shuts its pool down warmly), SIGKILL to the group if stuck."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def collector() -> Iterator[Collector]:
    c = Collector()
    yield c
    c.close()


@pytest.fixture
def stack(tmp_path, pg_url, redis_url, collector):  # noqa: ANN001, ANN201
    """Migrated PostgreSQL, then a real API process and a real worker process, both exporting to ``collector``."""
    import redis

    redis.Redis.from_url(redis_url).flushdb()  # other tests' queued jobs are not this worker's to run
    port = free_port()
    env = {
        **os.environ,
        "KBQA_DATA_DIR": str(tmp_path / "data"),
        "KBQA_DATABASE__URL": pg_url,
        "KBQA_INGESTION__EXECUTOR": "celery",
        "KBQA_INGESTION__BROKER_URL": redis_url,
        "KBQA_API__PORT": str(port),
        "KBQA_API__REQUESTS_PER_MINUTE": "0",
        "KBQA_API__TOKENS_PER_MINUTE": "0",
        "KBQA_OTLP_ENDPOINT": collector.endpoint,
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }
    env.pop("OTEL_BSP_SCHEDULE_DELAY", None)
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        database={"url": pg_url},
        ingestion={"executor": "celery", "broker_url": redis_url},
    )
    migrate_database(settings)
    db = Database(pg_url)
    with db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="default", name="otlp-test", role=Role.EDITOR)
    logs = tmp_path / "logs"
    logs.mkdir()
    api_log = open(logs / "api.log", "wb")  # noqa: SIM115
    worker_log = open(logs / "worker.log", "wb")  # noqa: SIM115
    api = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
        cwd=REPO,
        env={**env, "OTEL_BSP_SCHEDULE_DELAY": "200"},
        stdout=api_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker = subprocess.Popen(
        [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1", "--loglevel", "INFO"],
        cwd=REPO,
        env=env,
        stdout=worker_log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, api, logs / "api.log", timeout_s=120)
        yield url, key, db, api, worker, logs
    finally:
        for proc in (worker, api):
            _stop(proc)
        api_log.close()
        worker_log.close()
        db.dispose()


def _wait_indexed(url: str, key: str, document_id: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    status = ""
    while time.monotonic() < deadline:
        r = httpx.get(f"{url}/api/v1/documents/{document_id}", headers={"Authorization": f"Bearer {key}"}, timeout=10)
        status = r.json().get("status", "")
        if status in ("indexed", "failed"):
            assert status == "indexed", r.json()
            return
        time.sleep(0.3)
    raise AssertionError(f"document stuck in {status!r}")


def test_upload_trace_spans_api_and_worker_processes(stack, collector) -> None:  # noqa: ANN001
    url, key, _db, api, worker, logs = stack
    r = httpx.post(
        f"{url}/api/v1/documents",
        headers={"Authorization": f"Bearer {key}"},
        files={"files": ("kestrel.md", DOC, "text/markdown")},
        timeout=30,
    )
    assert r.status_code == 202, r.text
    document_id = r.json()["documents"][0]["id"]
    _wait_indexed(url, key, document_id, timeout=90)

    # the API's spans come within its 200 ms export delay; the worker's come when it stops (flush on exit)
    collector.wait_for("the upload's server span", lambda ss: any(_is_upload(s) for s in ss), timeout=30)
    _stop(worker)
    assert worker.returncode == 0, (logs / "worker.log").read_text()[-3000:]
    spans = collector.wait_for(
        "the worker's ingestion spans",
        lambda ss: {"kbqa.ingest", "kbqa.ingest.indexing"} <= {s.name for s in ss if s.service == "kbqa-worker"},
        timeout=30,
    )

    upload = next(s for s in spans if _is_upload(s))
    assert upload.service == "kbqa-api" and upload.pid == api.pid
    trace = [s for s in spans if s.trace_id == upload.trace_id]
    by_id = {s.span_id: s for s in trace}
    worker_spans = [s for s in trace if s.service == "kbqa-worker"]
    assert worker_spans, "no worker span in the upload's trace"
    # a pool child of the worker process, not the API and not the worker's main process
    assert not {s.pid for s in worker_spans} & {api.pid, worker.pid, os.getpid(), -1}

    ingest = next(s for s in worker_spans if s.name == "kbqa.ingest")
    assert ingest.parent_id == upload.span_id, "the worker's job span is not a child of the upload request"
    assert ingest.attributes["kbqa.document_id"] == document_id
    stages = {s.name: s for s in worker_spans if s.name.startswith("kbqa.ingest.")}
    assert {"kbqa.ingest.parsing", "kbqa.ingest.chunking", "kbqa.ingest.embedding", "kbqa.ingest.indexing"} <= set(
        stages
    )
    assert all(s.parent_id == ingest.span_id for s in stages.values())

    # every span of the trace hangs, through parents that all arrived, from the upload's server span. (The upload
    # span itself may have a parent: when another test in this pytest process instrumented httpx, the test's own
    # request carries a traceparent from this process, whose spans are not exported here.)
    for s in trace:
        hops = s
        while hops.parent_id and hops is not upload:
            assert hops.parent_id in by_id, f"{s.name} ({s.service}): parent {hops.parent_id} never arrived"
            hops = by_id[hops.parent_id]
        assert hops is upload, f"{s.name} ({s.service}) roots at {hops.name}"

    sql = [s for s in trace if s.scope == "opentelemetry.instrumentation.sqlalchemy"]
    assert {s.service for s in sql} == {"kbqa-api", "kbqa-worker"}
    assert any(s.attributes.get("db.system") == "postgresql" for s in sql)
    # the worker's database writes for the job sit under its stage spans
    assert any(s.service == "kbqa-worker" and by_id[s.parent_id].name.startswith("kbqa.ingest") for s in sql)
    # and Celery's own task span was exported by the same pool child
    celery = [s for s in spans if s.scope == "opentelemetry.instrumentation.celery"]
    assert any(s.attributes.get("celery.task_name") == "kbqa.ingest_document" for s in celery)
    assert {s.pid for s in celery} & {s.pid for s in worker_spans}
    # the API publishes the task inside the upload's trace, and the worker's task span continues it
    publish = [s for s in trace if s.scope == "opentelemetry.instrumentation.celery" and s.service == "kbqa-api"]
    run = [s for s in trace if s.scope == "opentelemetry.instrumentation.celery" and s.service == "kbqa-worker"]
    assert publish and run, f"Celery spans in the upload's trace: publish {len(publish)}, run {len(run)}"
    assert run[0].parent_id in {p.span_id for p in publish}


def _is_upload(s: Span) -> bool:
    return s.kind == 2 and s.attributes.get("http.route") == "/api/v1/documents" and s.name.startswith("POST")
