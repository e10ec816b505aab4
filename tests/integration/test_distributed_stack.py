"""The distributed layout on real parts: two ``kbqa serve`` processes and two ``kbqa worker`` processes, each with a
data dir of its own (nothing shared on disk), on PostgreSQL (documents, chunks and the knowledge graph), Redis (the
broker), Weaviate (keyword + vector; its own server here, so the test can restart it) and MinIO (uploaded
originals). Uploads go through both APIs; one worker is SIGKILLed mid-job and replaced, and Weaviate is stopped and
restarted during ingestion (both APIs answer ``/readyz`` ``degraded`` meanwhile, and search still answers). Then every
document is indexed exactly once, the chunk rows, the Weaviate objects and the graph's chunk nodes agree, and both
APIs return the same search results and cite the same passages."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from tests.conftest import service_missing
from tests.servers import (
    WeaviatePorts,
    WeaviateServer,
    free_port,
    start_weaviate,
    stop_process,
    wait_ready,
    weaviate_binary,
)
from tests.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.slow]
pytest.importorskip("weaviate", reason="weaviate-client (the 'weaviate' extra) is not installed")
pytest.importorskip("minio", reason="the minio client (the 's3' extra) is not installed")

REPO = Path(__file__).resolve().parents[2]

TOPICS = [
    ("orion.md", "Orion Lamp", "The Orion lamp uses a 7 W G9 bulb; replace the bulb every 18 months."),
    ("kestrel.md", "Kestrel Hub", "The Kestrel hub pairs with sensors by holding the reset button for 5 seconds."),
    ("falcon.md", "Falcon Router", "The Falcon router stores its logs for 30 days before Falcon rotates them."),
    ("heron.md", "Heron Camera", "The Heron camera records at 1080p and keeps clips on the Heron SD card."),
    ("lynx.md", "Lynx Thermostat", "The Lynx thermostat holds the temperature within half a degree of the target."),
    ("otter.md", "Otter Speaker", "The Otter speaker runs for 12 hours on one charge of the Otter battery."),
]


@dataclass
class Stack:
    env: dict[str, str]
    tmp: Path
    pg_url: str
    weaviate: WeaviateServer
    weaviate_ports: WeaviatePorts
    weaviate_binary: Path
    apis: list[str] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)
    workers: list[subprocess.Popen] = field(default_factory=list)

    def _env(self, name: str) -> dict[str, str]:
        data = self.tmp / name
        data.mkdir(parents=True, exist_ok=True)
        return {**self.env, "KBQA_DATA_DIR": str(data)}

    def cli(self, *args: str, timeout: float = 180) -> str:
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env=self._env("cli"),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout

    def start_api(self) -> str:
        port = free_port()
        name = f"api-{len(self.apis)}"
        log = self.tmp / f"{name}.log"
        with log.open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "serve", "--port", str(port)],
                cwd=REPO,
                env=self._env(name),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, log, timeout_s=300)
        self.apis.append(url)
        return url

    def start_worker(self) -> subprocess.Popen:
        name = f"worker-{len(self.workers)}"
        with (self.tmp / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", "worker", "--concurrency", "1", "--loglevel", "WARNING"],
                cwd=REPO,
                env=self._env(name),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        self.workers.append(proc)
        return proc

    def stop_weaviate(self) -> None:
        assert self.weaviate.proc is not None
        stop_process(self.weaviate.proc)

    def start_weaviate(self) -> None:
        """(Re)start the stack's Weaviate: same ports, same data dir, so it comes back with its data."""
        self.weaviate = start_weaviate(self.weaviate_binary, self.tmp / "weaviate", self.weaviate_ports, 120)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(self.tmp.glob("*.log")))


@pytest.fixture
def stack(tmp_path: Path, pg_url: str, redis_url: str, minio_server: Any) -> Iterator[Stack]:
    import redis

    binary = weaviate_binary()
    if not binary.is_file():
        service_missing(f"no Weaviate server: {binary} not built (run `bash scripts/build-go-servers.sh`)")
    ports = WeaviatePorts.free()
    weaviate_server = start_weaviate(binary, tmp_path / "weaviate", ports, 120)
    redis.Redis.from_url(redis_url).flushdb()
    env = {
        **os.environ,
        "KBQA_DATABASE__URL": pg_url,
        "KBQA_INGESTION__EXECUTOR": "celery",
        "KBQA_INGESTION__BROKER_URL": redis_url,
        "KBQA_INGESTION__LEASE_S": "10",
        "KBQA_INGESTION__MAX_ATTEMPTS": "6",
        "KBQA_INGESTION__RETRY_BACKOFF_S": "2",
        "KBQA_INDEX__BACKEND": "weaviate",
        "KBQA_INDEX__WEAVIATE_URL": weaviate_server.url,
        "KBQA_INDEX__WEAVIATE_GRPC_PORT": str(weaviate_server.grpc_port),
        "KBQA_INDEX__GRAPH_BACKEND": "postgres",
        "KBQA_FILE_STORE__BACKEND": "s3",
        "KBQA_FILE_STORE__S3_ENDPOINT": minio_server.url,
        "KBQA_FILE_STORE__S3_BUCKET": f"kbqa-dist-{uuid.uuid4().hex[:10]}",
        "KBQA_FILE_STORE__S3_ACCESS_KEY": minio_server.access_key,
        "KBQA_FILE_STORE__S3_SECRET_KEY": minio_server.secret_key,
        "KBQA_API__REQUESTS_PER_MINUTE": "0",
        "KBQA_API__TOKENS_PER_MINUTE": "0",
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }
    s = Stack(
        env=env, tmp=tmp_path, pg_url=pg_url, weaviate=weaviate_server, weaviate_ports=ports, weaviate_binary=binary
    )
    try:
        s.cli("migrate")
        yield s
    finally:
        for proc in s.procs:
            stop_process(proc)
        s.stop_weaviate()


def wait_all(client: httpx.Client, ids: list[str], timeout_s: float) -> dict[str, dict[str, Any]]:
    deadline = time.monotonic() + timeout_s
    docs: dict[str, dict[str, Any]] = {}
    while time.monotonic() < deadline:
        docs = {i: client.get(f"/api/v1/documents/{i}").json() for i in ids}
        if all(d["status"] in ("indexed", "failed") for d in docs.values()):
            return docs
        time.sleep(1)
    raise AssertionError(f"documents stuck: { {i: d.get('status') for i, d in docs.items()} }")


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
    key = stack.cli("keys", "create", "--quiet", "--tenant", tenant, "--role", "editor", "--name", "dist")
    key = key.strip().splitlines()[-1]
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
            doc = f"# {title}\n\n## Facts\n\n{text}\n".encode()
            r = clients[i % 2].post("/api/v1/documents", files=[("files", (name, doc, "text/markdown"))])
            assert r.status_code == 202, r.text
            ids.append(r.json()["documents"][0]["id"])

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

        # Weaviate goes away during ingestion: both APIs stay up as "degraded" and still answer searches (graph).
        stack.stop_weaviate()
        for c in clients:
            wait_status(c, "degraded", timeout_s=60)
            r = c.get("/api/v1/search", params={"q": "Orion lamp bulb", "top_k": 5})
            assert r.status_code == 200 and r.json()["degraded"], r.text
        stack.start_weaviate()
        for c in clients:
            wait_status(c, "ready", timeout_s=90)  # the API reconnects to Weaviate on its own

        docs = wait_all(clients[1], ids, timeout_s=600)
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
