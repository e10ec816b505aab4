"""Two ingestion scenarios against real ``kbqa serve`` processes (embedded mode), shared by the integration test
(tests/integration/test_restart_recovery.py) and the ingest benchmark (benchmarks/bench_ingest_recovery.py):

- :func:`restart_recovery`: upload a batch, SIGKILL the server while jobs are queued and running, start it again on
  the same data, and time how long until the queue moves again; then check every document ended ``indexed`` or
  ``failed`` with a reason and that no chunk was written twice.
- :func:`small_during_long`: tenant A uploads a long document (plus a backlog), tenant B a small one while A's long
  job runs; time until B's document is indexed, and whether A's long document was still unfinished then.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.servers import Server, start_kbqa

TERMINAL = ("indexed", "failed")
RUNNING = ("parsing", "chunking", "embedding", "indexing")

_WORDS = (
    "router",
    "firmware",
    "pairing",
    "battery",
    "hinge",
    "camera",
    "invoice",
    "refund",
    "sensor",
    "schedule",
    "bridge",
    "channel",
    "thermostat",
    "lens",
    "warranty",
    "adapter",
    "cable",
    "gateway",
    "backup",
    "profile",
    "licence",
    "quota",
    "mirror",
    "cluster",
    "socket",
    "dimmer",
    "relay",
    "siren",
)


def text_document(n: int, *, paragraphs: int, marker: str) -> bytes:
    """A plain-text support article, different for each ``n``, that carries the unique word ``marker``."""
    lines = [f"Support article {n}: {marker}", ""]
    for p in range(paragraphs):
        words = [_WORDS[(n * 7 + p * 3 + i) % len(_WORDS)] for i in range(40)]
        lines.append(
            f"Section {p} of article {n} ({marker}). " + " ".join(words) + f". Step {p}: check the {words[0]} "
            f"and the {words[1]} before you restart the {words[2]}; article {n} paragraph {p} ends here."
        )
        lines.append("")
    return "\n".join(lines).encode()


def _client(server: Server, key: str) -> httpx.Client:
    return httpx.Client(base_url=server.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)


def _upload(client: httpx.Client, files: list[tuple[str, bytes]]) -> list[str]:
    r = client.post("/api/v1/documents", files=[("files", (name, data, "text/plain")) for name, data in files])
    if r.status_code != 202:
        raise AssertionError(f"upload refused: {r.status_code} {r.text[:500]}")
    return [d["id"] for d in r.json()["documents"]]


def _statuses(client: httpx.Client) -> dict[str, str]:
    r = client.get("/api/v1/documents", params={"limit": 100})
    r.raise_for_status()
    return {d["id"]: d["status"] for d in r.json()["documents"]}


def _db_jobs(data: Path) -> dict[str, tuple[str, int]]:
    """document id -> (status, attempts) of its latest job, read from the embedded SQLite database."""
    with closing(sqlite3.connect(data / "kbqa.db", timeout=30)) as db:
        rows = db.execute(
            "SELECT document_id, status, attempts FROM ingestion_jobs ORDER BY document_id, document_version"
        ).fetchall()
    return {doc: (status, attempts) for doc, status, attempts in rows}


def _db_duplicate_chunks(data: Path) -> list[str]:
    """Problems with the stored chunks: a (document, order) stored twice, the same text twice in one document, or a
    document whose chunk rows differ from its ``chunk_count``."""
    problems: list[str] = []
    with closing(sqlite3.connect(data / "kbqa.db", timeout=30)) as db:
        for doc, order, n in db.execute(
            "SELECT document_id, ord, COUNT(*) FROM chunks GROUP BY document_id, ord HAVING COUNT(*) > 1"
        ):
            problems.append(f"document {doc} has {n} chunks at position {order}")
        for doc, n in db.execute(
            "SELECT document_id, COUNT(*) - COUNT(DISTINCT text) FROM chunks GROUP BY document_id "
            "HAVING COUNT(*) > COUNT(DISTINCT text)"
        ):
            problems.append(f"document {doc} has {n} chunks whose text repeats another chunk")
        for doc, want, have in db.execute(
            "SELECT d.id, d.chunk_count, (SELECT COUNT(*) FROM chunks c WHERE c.document_id = d.id) FROM documents d"
        ):
            if want != have:
                problems.append(f"document {doc}: chunk_count {want} but {have} chunk rows")
    return problems


@dataclass
class RestartResult:
    uploaded: int
    at_kill: dict[str, tuple[str, int]]  # unfinished documents at the kill: (status, attempts) of their job
    ready_s: float  # restart: process start to /readyz 200
    moving_s: float  # /readyz 200 to the first change of a job left unfinished (0: it had moved already)
    moving_since_start_s: float  # the same from the start of the new process
    final: dict[str, dict] = field(default_factory=dict)  # document id -> its detail at the end
    duplicates: list[str] = field(default_factory=list)
    still_open_s: float = 0.0  # restart ready to every document terminal


def _upload_and_kill(
    data: Path, *, documents: int, paragraphs: int, env: dict[str, str] | None
) -> tuple[str, list[str]]:
    """Start a server on ``data``, upload the articles, SIGKILL it once a job embeds or indexes and three wait;
    the API key and the document ids."""
    server = start_kbqa(data, env=env)
    try:
        key = server.create_key(tenant="restart", role="editor")
        client = _client(server, key)
        files = [(f"article-{i:02d}.txt", text_document(i, paragraphs=paragraphs, marker=f"zqr{i:02d}x")) for i in
                 range(documents)]  # fmt: skip
        ids = _upload(client, files)
        deadline = time.monotonic() + 120
        while True:
            now = _statuses(client)
            writing = [d for d in ids if now.get(d) in ("embedding", "indexing")]
            queued = [d for d in ids if now.get(d) == "queued"]
            if writing and len(queued) >= 3:  # one job past parsing (its chunks being written), three waiting
                break
            if len(queued) < 3 and not any(now.get(d) in RUNNING for d in ids):
                raise AssertionError(f"the queue emptied before a kill could be placed: {now}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no job started within 120 s: {now}")
            time.sleep(0.1)
        server.kill()
    finally:
        server.stop()
    return key, ids


def restart_recovery(
    root: Path, *, documents: int = 12, paragraphs: int = 15, env: dict[str, str] | None = None,
    finish_timeout_s: float = 300.0,
    move_timeout_s: float = 30.0,
) -> RestartResult:  # fmt: skip
    """Upload ``documents`` text files, SIGKILL the server once a job embeds or indexes and three wait, start it again
    on the same data dir, and measure. Raises AssertionError if the kill could not be placed mid-queue."""
    data = root / "data"
    key, ids = _upload_and_kill(data, documents=documents, paragraphs=paragraphs, env=env)
    # The truth at the kill, from the database itself (the last listing may be a moment old).
    at_kill = {d: v for d, v in _db_jobs(data).items() if v[0] not in TERMINAL}
    if not at_kill:
        raise AssertionError("nothing was unfinished at the kill")

    moved_at: list[float] = []
    stop = threading.Event()

    def watch() -> None:  # from before the new process starts: it may take jobs before /readyz answers
        while not stop.is_set() and not moved_at:
            jobs = _db_jobs(data)
            if any(jobs.get(d) != v for d, v in at_kill.items()):
                moved_at.append(time.monotonic())
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    started = time.monotonic()
    watcher.start()
    try:
        server = start_kbqa(data, env=env)
    except BaseException:
        stop.set()
        raise
    ready = time.monotonic()
    try:
        client = _client(server, key)
        result = RestartResult(len(ids), at_kill, ready - started, float("inf"), float("inf"))
        deadline = ready + finish_timeout_s
        while time.monotonic() < deadline:
            if all(_db_jobs(data)[d][0] in TERMINAL for d in ids):
                break
            if not moved_at and time.monotonic() > ready + move_timeout_s:
                break  # stalled: no need to wait for the documents
            time.sleep(0.1)
        stop.set()
        watcher.join(timeout=30)
        if moved_at:
            result.moving_s = max(0.0, moved_at[0] - ready)
            result.moving_since_start_s = moved_at[0] - started
        result.still_open_s = time.monotonic() - ready
        result.final = {d: client.get(f"/api/v1/documents/{d}").json() for d in ids}
        for i, d in enumerate(ids):  # the index side: a unique word finds its chunks once each
            hits = client.get("/api/v1/search", params={"q": f"zqr{i:02d}x", "top_k": 50}).json()["results"]
            seen = [(h["document_id"], h["text"]) for h in hits if h["document_id"] == d]
            if len(seen) != len(set(seen)):
                result.duplicates.append(f"search for document {d} returns a chunk twice")
    finally:
        stop.set()
        server.stop()
    result.duplicates += _db_duplicate_chunks(data)
    return result


def long_text_document(*, paragraphs: int) -> bytes:
    """A long plain-text manual (many chunks: tens of seconds to embed on two busy cores)."""
    return text_document(999, paragraphs=paragraphs, marker="zqlongx")


@dataclass
class FairnessResult:
    small_s: float  # B's upload accepted to B's document indexed
    small_status: str
    long_status_then: str  # A's long document when B's was indexed
    long_s: float  # A's long document: upload to terminal (inf: not within the limit)
    long_chunks: int


def small_during_long(
    root: Path, *, long_paragraphs: int = 500, backlog: int = 6, backlog_paragraphs: int = 100,
    env: dict[str, str] | None = None, timeout_s: float = 240.0, wait_long: bool = True,
) -> FairnessResult:  # fmt: skip
    """Tenant A uploads a long document and a backlog of ``backlog`` articles (together more chunks than the long
    one, so a first-come-first-served queue would finish the long document before reaching B); once the long one is
    being ingested, tenant B uploads one small article. Measures B's time to ``indexed`` and A's long document's state
    then; with ``wait_long`` also how long the long document took (else ``long_s`` is inf)."""
    server = start_kbqa(root / "data", env=env)
    try:
        a = _client(server, server.create_key(tenant="tenant-a", role="editor"))
        b = _client(server, server.create_key(tenant="tenant-b", role="editor"))
        t_long = time.monotonic()
        [long_id] = _upload(a, [("manual.txt", long_text_document(paragraphs=long_paragraphs))])
        articles = [text_document(100 + i, paragraphs=backlog_paragraphs, marker=f"zqa{i}x") for i in range(backlog)]
        _upload(a, [(f"a-{i}.txt", data) for i, data in enumerate(articles)])
        deadline = time.monotonic() + 60
        while a.get(f"/api/v1/documents/{long_id}").json()["status"] not in RUNNING:
            if time.monotonic() > deadline:
                raise AssertionError("A's long document did not start within 60 s")
            time.sleep(0.1)
        t_small = time.monotonic()
        [small_id] = _upload(b, [("b.txt", text_document(500, paragraphs=3, marker="zqbx"))])
        deadline = t_small + timeout_s
        small = b.get(f"/api/v1/documents/{small_id}").json()
        while small["status"] not in TERMINAL and time.monotonic() < deadline:
            time.sleep(0.1)
            small = b.get(f"/api/v1/documents/{small_id}").json()
        small_s = time.monotonic() - t_small
        long_then = a.get(f"/api/v1/documents/{long_id}").json()["status"]
        long_doc = a.get(f"/api/v1/documents/{long_id}").json()
        while wait_long and long_doc["status"] not in TERMINAL and time.monotonic() < deadline:
            time.sleep(0.5)
            long_doc = a.get(f"/api/v1/documents/{long_id}").json()
        long_s = time.monotonic() - t_long if long_doc["status"] in TERMINAL else float("inf")
        return FairnessResult(small_s, small["status"], long_then, long_s, long_doc["chunk_count"])
    finally:
        server.stop()
