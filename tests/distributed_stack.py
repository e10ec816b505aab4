"""The distributed layout started on real parts, without pytest: ``kbqa serve`` and ``kbqa worker`` processes, each
with a data dir of its own (nothing shared on disk), on PostgreSQL (documents, chunks and the knowledge graph), Redis
(the broker), Weaviate (keyword + vector; its own server, so a caller can stop and restart it) and MinIO (uploaded
originals). tests/integration/test_distributed_stack.py asserts on it; benchmarks/bench_distributed.py times it.

Also the generated product documents both upload (:func:`product_docs`) and the wait for a batch of uploads
(:func:`wait_indexed`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.servers import (
    MinioServer,
    WeaviatePorts,
    WeaviateServer,
    free_port,
    start_weaviate,
    stop_process,
    wait_ready,
)

REPO = Path(__file__).resolve().parent.parent
TERMINAL = ("indexed", "failed")


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
        """Run ``kbqa <args>`` with the stack's settings; its stdout (RuntimeError with stderr if it fails)."""
        out = subprocess.run(
            [sys.executable, "-m", "app.cli", *args],
            cwd=REPO,
            env=self._env("cli"),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        if out.returncode != 0:
            raise RuntimeError(f"kbqa {' '.join(args)} exited {out.returncode}: {out.stderr[-3000:]}")
        return out.stdout

    def create_key(self, *, tenant: str, role: str = "editor", name: str = "dist") -> str:
        out = self.cli("keys", "create", "--quiet", "--tenant", tenant, "--role", role, "--name", name)
        return out.strip().splitlines()[-1]

    def start_api(self) -> str:
        """Start one more ``kbqa serve`` on a free port; its URL once ``/readyz`` answers."""
        port = free_port()
        name = f"api-{len(self.apis)}"
        log = self.tmp / f"{name}.log"
        proc = self._spawn(name, ["serve", "--port", str(port)])
        url = f"http://127.0.0.1:{port}"
        wait_ready(url, proc, log, timeout_s=300)
        self.apis.append(url)
        return url

    def start_worker(self) -> subprocess.Popen:
        """Start one more ``kbqa worker`` (one process: ``--concurrency 1``) in its own session."""
        proc = self._spawn(f"worker-{len(self.workers)}", ["worker", "--concurrency", "1", "--loglevel", "WARNING"])
        self.workers.append(proc)
        return proc

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        """``kbqa <args>`` in its own session, its output in ``<name>.log``; stopped with the stack."""
        with (self.tmp / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "app.cli", *args],
                cwd=REPO,
                env=self._env(name),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def stop_weaviate(self) -> None:
        assert self.weaviate.proc is not None
        stop_process(self.weaviate.proc)

    def start_weaviate(self) -> None:
        """(Re)start the stack's Weaviate: same ports, same data dir, so it comes back with its data."""
        self.weaviate = start_weaviate(self.weaviate_binary, self.tmp / "weaviate", self.weaviate_ports, 120)

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted(self.tmp.glob("*.log")))


def stack_env(*, pg_url: str, redis_url: str, weaviate: WeaviateServer, minio: MinioServer) -> dict[str, str]:
    """The settings every process of the stack shares: the Celery executor, Weaviate, the PostgreSQL graph, MinIO
    (a fresh bucket), short leases and retries (a killed worker's job comes back within seconds), no rate limits."""
    return {
        **os.environ,
        "KBQA_DATABASE__URL": pg_url,
        "KBQA_INGESTION__EXECUTOR": "celery",
        "KBQA_INGESTION__BROKER_URL": redis_url,
        "KBQA_INGESTION__LEASE_S": "10",
        "KBQA_INGESTION__MAX_ATTEMPTS": "6",
        "KBQA_INGESTION__RETRY_BACKOFF_S": "2",
        "KBQA_INDEX__BACKEND": "weaviate",
        "KBQA_INDEX__WEAVIATE_URL": weaviate.url,
        "KBQA_INDEX__WEAVIATE_GRPC_PORT": str(weaviate.grpc_port),
        "KBQA_INDEX__GRAPH_BACKEND": "postgres",
        "KBQA_FILE_STORE__BACKEND": "s3",
        "KBQA_FILE_STORE__S3_ENDPOINT": minio.url,
        "KBQA_FILE_STORE__S3_BUCKET": f"kbqa-dist-{uuid.uuid4().hex[:10]}",
        "KBQA_FILE_STORE__S3_ACCESS_KEY": minio.access_key,
        "KBQA_FILE_STORE__S3_SECRET_KEY": minio.secret_key,
        "KBQA_API__REQUESTS_PER_MINUTE": "0",
        "KBQA_API__TOKENS_PER_MINUTE": "0",
        "HF_HUB_OFFLINE": "1",
        "DO_NOT_TRACK": "1",
    }


@contextmanager
def run_stack(
    tmp: Path,
    *,
    pg_url: str,
    redis_url: str,
    minio: MinioServer,
    weaviate_binary: Path,
    env: dict[str, str] | None = None,
) -> Iterator[Stack]:
    """Start the stack's own Weaviate (free loopback ports, data under ``tmp``), empty the broker's Redis database,
    migrate the (empty) PostgreSQL database at ``pg_url``; yield the stack with no API or worker yet (start them with
    :meth:`Stack.start_api` and :meth:`Stack.start_worker`; ``env`` is added to every process's environment). On exit
    every process it started is stopped."""
    import redis

    ports = WeaviatePorts.free()
    weaviate = start_weaviate(weaviate_binary, tmp / "weaviate", ports, 120)
    stack = Stack(
        env={**stack_env(pg_url=pg_url, redis_url=redis_url, weaviate=weaviate, minio=minio), **(env or {})},
        tmp=tmp,
        pg_url=pg_url,
        weaviate=weaviate,
        weaviate_ports=ports,
        weaviate_binary=weaviate_binary,
    )
    try:
        redis.Redis.from_url(redis_url).flushdb()
        stack.cli("migrate")
        yield stack
    finally:
        for proc in stack.procs:
            stop_process(proc)
        stack.stop_weaviate()


# -- documents --------------------------------------------------------------------------------------------------------
_NAMES = ["Puffin", "Marten", "Wren", "Ibis", "Gannet", "Plover", "Stoat", "Tern", "Shrike", "Dunlin", "Avocet", "Vole"]
_KINDS = ["Sensor", "Doorbell", "Plug", "Lock", "Fan", "Kettle", "Scale", "Purifier", "Blind", "Charger"]


def product_name(i: int) -> str:
    return f"{_NAMES[i % len(_NAMES)]} {_KINDS[(i // len(_NAMES)) % len(_KINDS)]} {i}"


def product_docs(n: int, *, start: int = 0) -> list[tuple[str, bytes]]:
    """``n`` small, distinct Markdown product sheets (filename, bytes): a title and three short sections (pairing,
    power, warranty) with numbers that differ per document, so every one is its own content and its own answer."""
    docs = []
    for i in range(start, start + n):
        name = product_name(i)
        text = (
            f"# {name}\n\n"
            f"## Pairing\n\nTo pair the {name}, hold its pairing button for {3 + i % 9} seconds until the ring "
            f"flashes green. The {name} then appears in the app under devices.\n\n"
            f"## Power\n\nThe {name} draws {2 + i % 40} W in use and {1 + i % 7} tenths of a watt on standby; on its "
            f"battery it runs for {4 + i % 20} hours.\n\n"
            f"## Warranty\n\nThe {name} carries a {1 + i % 5}-year warranty; register it within {10 + i % 50} days "
            f"of purchase to add a further year.\n"
        )
        docs.append((f"{name.lower().replace(' ', '-')}.md", text.encode()))
    return docs


def product_questions(n: int, *, docs: int) -> list[str]:
    """``n`` questions about the first ``docs`` product sheets, spread over them and over their three sections."""
    forms = [
        "How long do I hold the pairing button of the {}?",
        "How many hours does the {} run on its battery?",
        "How long is the warranty of the {}?",
    ]
    return [forms[k % len(forms)].format(product_name((k * 7) % docs)) for k in range(n)]


def upload(client: httpx.Client, files: list[tuple[str, bytes]]) -> list[str]:
    """POST ``files`` (Markdown) in one request; their document ids."""
    r = client.post("/api/v1/documents", files=[("files", (name, data, "text/markdown")) for name, data in files])
    if r.status_code != 202:
        raise RuntimeError(f"upload answered {r.status_code}: {r.text[:500]}")
    return [d["id"] for d in r.json()["documents"]]


def wait_indexed(client: httpx.Client, ids: list[str], timeout_s: float, poll_s: float = 1.0) -> dict[str, Any]:
    """Poll the document list (one request, at most 1000 documents) until every document of ``ids`` is ``indexed``
    or ``failed``; the documents by id. AssertionError with the statuses if ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    wanted = set(ids)
    docs: dict[str, Any] = {}
    while True:
        r = client.get("/api/v1/documents", params={"limit": 1000})
        r.raise_for_status()
        docs = {d["id"]: d for d in r.json()["documents"] if d["id"] in wanted}
        if len(docs) == len(wanted) and all(d["status"] in TERMINAL for d in docs.values()):
            return docs
        if time.monotonic() > deadline:
            stuck = {i: docs.get(i, {}).get("status", "missing") for i in ids}
            raise AssertionError(f"documents not done after {timeout_s:.0f} s: {stuck}")
        time.sleep(poll_s)
