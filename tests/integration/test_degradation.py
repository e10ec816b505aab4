"""The degradation ladder with dependencies really stopped or failing: an LLM server that refuses connections, one
that accepts and never answers (first-token timeout), and a database that is down."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.session import Database
from core.settings import Settings
from core.types import Role
from tests.servers import free_port
from tests.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOCS = ["faq.md", "shipping-policy.md"]


class SilentServer:
    """Accepts TCP connections and never answers: an LLM server stuck before its first token."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns: list[socket.socket] = []
        self._stop = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop:
            try:
                conn, _ = self.sock.accept()
                self.conns.append(conn)
            except OSError:
                return

    def close(self) -> None:
        self._stop = True
        for c in self.conns:
            c.close()
        self.sock.close()


def _app_with_llm_at(tmp_path: Path, url: str):  # noqa: ANN202
    from app.main import build_container, create_app

    settings = Settings(
        _env_file=None,
        data_dir=tmp_path / "data",
        api={"requests_per_minute": 0, "tokens_per_minute": 0},
        generation={"backend": "vllm", "vllm_url": url, "first_token_timeout_s": 2.0, "request_timeout_s": 5.0},
    )
    migrate_database(settings)
    container = build_container(settings)
    for name in DOCS:
        container.ingest.submit(tenant_id="default", filename=name, data=(REPO / "demo/kb" / name).read_bytes())
    container.dispatcher.wait(timeout=300)
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="default", name="t", role=Role.AGENT)
    return container, create_app(settings, container=container, sweeper=False), key


@pytest.mark.parametrize("failure", ["connection_refused", "no_first_token"])
def test_llm_down_falls_back_to_a_flagged_extractive_answer(tmp_path, failure):
    silent = SilentServer() if failure == "no_first_token" else None
    port = silent.port if silent else free_port()
    container, app, key = _app_with_llm_at(tmp_path, f"http://127.0.0.1:{port}/v1")
    try:
        with TestClient(app) as client:
            started = time.monotonic()
            with client.stream(
                "POST",
                "/api/v1/ask",
                headers={"Authorization": f"Bearer {key}"},
                json={"question": "How long does standard shipping take?"},
            ) as r:
                events = parse_sse("".join(r.iter_text()))
            elapsed = time.monotonic() - started
    finally:
        container.close()
        if silent:
            silent.close()
    types = [t for t, _ in events]
    assert types[-1] == "done" and "error" not in types
    degraded = [d["reasons"] for t, d in events if t == "degraded"]
    assert any("llm_fallback" in reasons for reasons in degraded)
    answer = "".join(d["text"] for t, d in events if t == "token")
    assert answer and "[" in answer
    assert events[-1][1]["degraded"] is True
    assert elapsed < 60


def test_database_down_is_a_fast_503_json(make_settings):
    from app.main import Container, create_app
    from app.services.metrics import Metrics
    from app.services.quotas import QuotaLimiter

    settings = make_settings()
    db = Database(f"postgresql+psycopg://postgres@127.0.0.1:{free_port()}/kbqa", connect_timeout_s=2)

    class Idle:
        def count(self, tenant_id=None):  # noqa: ANN001, ANN202
            return 0

        def close(self) -> None:
            pass

    class Indexes:
        keyword = vector = graph = Idle()

        def close(self) -> None:
            pass

    class Embedder:
        def embed_query(self, text):  # noqa: ANN001, ANN202
            return [0.0]

    container = Container(
        settings=settings,
        db=db,
        embedder=Embedder(),
        indexes=Indexes(),
        chunk_store=None,
        retriever=None,
        answers=None,
        ingest=None,
        dispatcher=None,
        limiter=QuotaLimiter(requests_per_minute=0, tokens_per_minute=0),
        metrics=Metrics(),
    )
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        started = time.monotonic()
        r = client.post("/api/v1/ask", json={"question": "anything"}, headers={"Authorization": "Bearer kbqa_x"})
        elapsed = time.monotonic() - started
        assert r.status_code == 503
        assert r.json()["error"]["code"] == "database_unavailable"
        assert elapsed < 10
        ready = client.get("/readyz")
        assert ready.status_code == 503 and ready.json()["checks"]["database"] is False
    db.dispose()


def test_weaviate_down_at_start_up_degrades_to_the_graph_and_nothing_is_stuck(tmp_path):
    """Weaviate (keyword + vector in distributed mode) refuses connections: the service still starts, /readyz says
    degraded, questions are answered from the knowledge graph (on the shared data volume) and flagged, and an
    upload waits and is retried, then ends ``failed`` with the reason once its attempts are used up. The graph and
    chunks were written earlier by an embedded-mode ingest into the same data dir and database. (The graph is off by
    default; a deployment that wants this fallback turns it on, as the distributed one does in PostgreSQL.)"""
    from app.main import build_container, create_app

    base = {"_env_file": None, "data_dir": tmp_path / "data", "api": {"requests_per_minute": 0, "tokens_per_minute": 0}}
    embedded = Settings(**base, index={"graph_backend": "embedded"})
    migrate_database(embedded)
    container = build_container(embedded)
    for name in ("return-and-warranty-policy.docx", "faq.md"):
        container.ingest.submit(tenant_id="default", filename=name, data=(REPO / "demo/kb" / name).read_bytes())
    container.dispatcher.wait(timeout=300)
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="default", name="t", role=Role.EDITOR)
    container.close()

    down = Settings(
        **base,
        index={"backend": "weaviate", "weaviate_url": f"http://127.0.0.1:{free_port()}", "graph_backend": "embedded"},
        ingestion={"max_attempts": 2, "retry_backoff_s": 0.2},
    )
    container = build_container(down)  # must not raise although Weaviate is unreachable
    auth = {"Authorization": f"Bearer {key}"}
    try:
        with TestClient(create_app(down, container=container, sweeper=False)) as client:
            ready = client.get("/readyz")
            assert ready.status_code == 200, ready.text
            body = ready.json()
            assert body["status"] == "degraded"
            assert body["checks"] | {"keyword": False, "vector": False, "graph": True} == body["checks"]
            started = time.monotonic()
            with client.stream(
                "POST", "/api/v1/ask", headers=auth, json={"question": "How long is the Kestrel Hub warranty?"}
            ) as r:
                assert r.status_code == 200
                events = parse_sse("".join(r.iter_text()))
            elapsed = time.monotonic() - started
            types = [t for t, _ in events]
            assert types[-1] == "done" and "error" not in types, events
            done = events[-1][1]
            assert done["degraded"] is True and set(done["retrieval_degraded"]) >= {"keyword", "vector"}
            sources = next(d["sources"] for t, d in events if t == "sources")
            assert sources and any("Warranty" in s["title"] for s in sources), sources
            answer = "".join(d["text"] for t, d in events if t == "token")
            assert "[1]" in answer or "[2]" in answer, answer
            assert elapsed < 30

            up = client.post(
                "/api/v1/documents",
                headers=auth,
                files={"files": ("late.md", b"# Late\n\nWritten while down.", "text/markdown")},
            )
            assert up.status_code == 202
            container.dispatcher.wait(timeout=120)
            url = f"/api/v1/documents/{up.json()['documents'][0]['id']}"
            doc = client.get(url, headers=auth).json()
            # a service outage is not the document's fault: it waits and is tried again
            assert doc["status"] == "queued" and doc["failure_reason"].startswith("will retry"), doc
            assert "weaviate" in doc["failure_reason"].lower() and doc["attempts"] == 1
            time.sleep(0.3)
            assert container.ingest.sweep() == 1
            container.dispatcher.wait(timeout=120)
            doc = client.get(url, headers=auth).json()
            assert doc["status"] == "failed" and doc["attempts"] == 2, doc
            assert "weaviate" in doc["failure_reason"].lower() and "gave up after 2 attempts" in doc["failure_reason"]
    finally:
        container.close()
