"""The distributed layout on real parts: two ``kbqa serve`` processes and two ``kbqa worker`` processes, each with a
data dir of its own (nothing shared on disk), on PostgreSQL (documents, chunks and the knowledge graph), Redis (the
broker), Weaviate (keyword + vector; its own server here, so the test can restart it) and MinIO (uploaded
originals), started by tests/distributed_stack.py. 200 documents are uploaded through both APIs (a long one, six
topics, generated product sheets); one worker is SIGKILLed mid-job and replaced, and Weaviate is stopped and restarted
during ingestion (both APIs answer ``/readyz`` ``degraded`` meanwhile, and search still answers). Then every document
is indexed exactly once, the chunk rows, the Weaviate objects and the graph's chunk nodes agree, and both APIs return
the same search results and cite the same passages."""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import service_missing
from tests.distributed_stack import Stack, product_docs, run_stack, upload, wait_indexed
from tests.servers import MinioServer, weaviate_binary
from tests.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.slow]
pytest.importorskip("weaviate", reason="weaviate-client (the 'weaviate' extra) is not installed")
pytest.importorskip("minio", reason="the minio client (the 's3' extra) is not installed")

#: Documents uploaded in all: the long one (whose worker is killed), the six topics, and generated product sheets.
DOCUMENTS = 200
#: Product sheets per upload request (the requests alternate between the two APIs).
BATCH = 25
TOPICS = [
    ("orion.md", "Orion Lamp", "The Orion lamp uses a 7 W G9 bulb; replace the bulb every 18 months."),
    ("kestrel.md", "Kestrel Hub", "The Kestrel hub pairs with sensors by holding the reset button for 5 seconds."),
    ("falcon.md", "Falcon Router", "The Falcon router stores its logs for 30 days before Falcon rotates them."),
    ("heron.md", "Heron Camera", "The Heron camera records at 1080p and keeps clips on the Heron SD card."),
    ("lynx.md", "Lynx Thermostat", "The Lynx thermostat holds the temperature within half a degree of the target."),
    ("otter.md", "Otter Speaker", "The Otter speaker runs for 12 hours on one charge of the Otter battery."),
]


@pytest.fixture
def stack(tmp_path: Path, pg_url: str, redis_url: str, minio_server: MinioServer) -> Iterator[Stack]:
    binary = weaviate_binary()
    if not binary.is_file():
        service_missing(f"no Weaviate server: {binary} not built (run `bash scripts/build-go-servers.sh`)")
    with run_stack(tmp_path, pg_url=pg_url, redis_url=redis_url, minio=minio_server, weaviate_binary=binary) as s:
        yield s


def wait_status(client: httpx.Client, status: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    seen: list[Any] = []
    while time.monotonic() < deadline:
        r = client.get("/readyz")
        seen.append((r.status_code, r.json().get("status")))
        if r.status_code == 200 and r.json()["status"] == status:
            return
        time.sleep(0.5)
    raise AssertionError(f"/readyz never answered {status!r}: {seen[-5:]}")


def job_owner_pid(pg_url: str, document_id: str) -> int | None:
    engine = sa.create_engine(pg_url)
    try:
        with engine.connect() as conn:
            owner = conn.execute(
                sa.text(
                    "SELECT lease_owner FROM ingestion_jobs WHERE document_id = :d AND status NOT IN "
                    "('indexed', 'failed', 'queued') ORDER BY created_at DESC LIMIT 1"
                ),
                {"d": document_id},
            ).scalar()
    finally:
        engine.dispose()
    return int(owner.rsplit(":", 1)[1]) if owner else None  # a worker's owner is "celery:<host>:<pid>"


def test_two_apis_two_workers_on_the_distributed_engines(stack: Stack) -> None:
    tenant = f"dist-{uuid.uuid4().hex[:8]}"
    for _ in range(2):
        stack.start_worker()
    api_a, api_b = stack.start_api(), stack.start_api()
    key = stack.create_key(tenant=tenant)
    clients = [
        httpx.Client(base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=120) for u in (api_a, api_b)
    ]
    try:
        for c in clients:
            assert c.get("/readyz").json()["status"] == "ready", c.get("/readyz").text

        # A long document first (the one whose worker dies), then the short ones, alternating between the APIs.
        body = "\n\n".join(
            f"## Section {i}\n\nParagraph {i} explains how the Kestrel unit number {i} pairs with hub model {i * 7}."
            for i in range(150)
        )
        r = clients[0].post("/api/v1/documents", files=[("files", ("long.md", f"# Guide\n\n{body}", "text/markdown"))])
        assert r.status_code == 202, r.text
        long_id = r.json()["documents"][0]["id"]
        ids = [long_id]
        for i, (name, title, text) in enumerate(TOPICS):
            ids += upload(clients[i % 2], [(name, f"# {title}\n\n## Facts\n\n{text}\n".encode())])

        # SIGKILL the worker holding the long document's job while it runs, and start a replacement.
        deadline = time.monotonic() + 240
        pid = None
        while time.monotonic() < deadline and pid is None:
            pid = job_owner_pid(stack.pg_url, long_id)
            time.sleep(0.2)
        assert pid is not None, "the long document's job never started\n" + stack.logs()
        victim = next(w for w in stack.workers if w.poll() is None and os.getpgid(pid) == w.pid)
        os.killpg(victim.pid, signal.SIGKILL)
        victim.wait(timeout=10)
        stack.start_worker()

        # The product sheets fill the queue behind them; Weaviate's outage below falls in their ingestion.
        sheets = product_docs(DOCUMENTS - len(ids))
        for i in range(0, len(sheets), BATCH):
            ids += upload(clients[(i // BATCH) % 2], sheets[i : i + BATCH])
        assert len(set(ids)) == DOCUMENTS

        # Weaviate goes away during ingestion: both APIs stay up as "degraded" and still answer searches (graph).
        stack.stop_weaviate()
        for c in clients:
            wait_status(c, "degraded", timeout_s=60)
            r = c.get("/api/v1/search", params={"q": "Orion lamp bulb", "top_k": 5})
            assert r.status_code == 200 and r.json()["degraded"], r.text
        stack.start_weaviate()
        for c in clients:
            wait_status(c, "ready", timeout_s=90)  # the API reconnects to Weaviate on its own

        docs = wait_indexed(clients[1], ids, timeout_s=900)
        assert all(d["status"] == "indexed" for d in docs.values()), {
            i: (d["status"], d.get("failure_reason")) for i, d in docs.items()
        }

        # Exactly once everywhere: chunk rows, Weaviate objects and graph chunk nodes agree, no duplicates.
        engine = sa.create_engine(stack.pg_url)
        with engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT id FROM chunks WHERE tenant_id = :t"), {"t": tenant}).scalars().all()
            graph_chunks = conn.execute(
                sa.text("SELECT count(*) FROM graph_nodes WHERE tenant_id = :t AND kind = 'c'"), {"t": tenant}
            ).scalar_one()
            attempts = conn.execute(
                sa.text("SELECT max(attempts) FROM ingestion_jobs WHERE document_id = :d"), {"d": long_id}
            ).scalar_one()
        engine.dispose()
        assert len(rows) == len(set(rows)) == sum(d["chunk_count"] for d in docs.values())
        assert graph_chunks == len(rows)
        assert attempts >= 2, "the killed job was not picked up again"
        from retrieval.weaviate_backend import WeaviateIndex

        weaviate = WeaviateIndex(
            stack.env["KBQA_INDEX__WEAVIATE_URL"], dim=384, grpc_port=int(stack.env["KBQA_INDEX__WEAVIATE_GRPC_PORT"])
        )
        try:
            assert weaviate.count(tenant) == len(rows)
        finally:
            weaviate.close()

        # Both APIs answer alike: same ranked results, same cited passages.
        for q in ("How often is the Orion bulb replaced?", "Kestrel reset button", "Falcon router logs"):
            results = [c.get("/api/v1/search", params={"q": q, "top_k": 5}).json() for c in clients]
            assert results[0]["degraded"] == [] and results[1]["degraded"] == []
            ranked = [[(h["chunk_id"], round(h["score"], 6)) for h in r["results"]] for r in results]
            assert ranked[0] == ranked[1] and ranked[0], (q, ranked)
        cited = []
        for c in clients:
            with c.stream(
                "POST", "/api/v1/ask", json={"question": "How often should the Orion bulb be replaced?"}
            ) as r:
                events = parse_sse("".join(r.iter_text()))
            answer = "".join(d["text"] for t, d in events if t == "token")
            assert "18 months" in answer
            cited.append([s["chunk_id"] for s in next(d for t, d in events if t == "sources")["sources"]])
        assert cited[0] == cited[1]

        # No process kept an original on its own disk: they are in the bucket.
        assert not any((stack.tmp / p.name / "uploads").exists() for p in stack.tmp.iterdir() if p.is_dir())
    finally:
        for c in clients:
            c.close()
