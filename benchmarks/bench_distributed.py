"""Distributed mode next to embedded mode, on loopback: ingest throughput, search latency and time to first answer
token under 1, 8 and 32 concurrent clients.

Distributed: two ``kbqa serve`` and two ``kbqa worker`` processes (one Celery process each) on PostgreSQL, Redis,
Weaviate and MinIO, started as tests/integration/test_distributed_stack.py starts them (tests/distributed_stack.py);
PostgreSQL and Redis are the ones `make services` runs (``KBQA_TEST_PG_URL``, ``KBQA_TEST_REDIS_URL``; a scratch
database, dropped afterwards), Weaviate and MinIO the binaries scripts/build-go-servers.sh builds, each started here
on free loopback ports. Embedded: one ``kbqa serve`` with the default settings (SQLite, tantivy + the embedded vector
index, ingestion in the server process) and a data dir of its own.

Both get the same ``--docs`` generated Markdown product sheets (tests/distributed_stack.py ``product_docs``: a title
and three short sections each), uploaded 25 per request (alternating between the two APIs in distributed mode) after a
warm-up batch of 8 other sheets (model loading is not counted). Ingest throughput: documents and chunks per second
from the first upload until the last document is ``indexed``. Then, per level of concurrent clients, ``--requests``
``GET /api/v1/search`` and then ``--requests`` ``POST /api/v1/ask`` (extractive backend, no LLM), each request to the
next API in turn; search latency is the whole response, first token the time until the ``token`` event arrives (the
stream is then read to its end). The client runs on the same machine as the servers.

    python benchmarks/bench_distributed.py [--docs 200] [--requests 64] [--levels 1,8,32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.distributed_stack import product_docs, product_questions, run_stack, upload, wait_indexed  # noqa: E402
from tests.servers import minio_binary, run_kbqa, run_minio, scratch_pg_database, weaviate_binary  # noqa: E402

TENANT = "bench"
BATCH = 25
WARMUP_DOCS = 8
#: Both modes answer with the extractive backend (no LLM), whatever the environment says.
MODE_ENV = {"KBQA_GENERATION__BACKEND": "extractive"}


@dataclass
class Latency:
    ms: list[float] = field(default_factory=list)
    failures: Counter[str] = field(default_factory=Counter)  # why a request did not count: status, error, ...
    wall_s: float = 0.0

    @property
    def errors(self) -> int:
        return sum(self.failures.values())

    def pct(self, q: int) -> float:
        if not self.ms:
            return float("nan")
        if len(self.ms) == 1:
            return self.ms[0]
        return statistics.quantiles(self.ms, n=100, method="inclusive")[q - 1]


@dataclass
class ModeResult:
    mode: str
    docs: int = 0
    chunks: int = 0
    failed: int = 0
    ingest_s: float = 0.0
    search: dict[int, Latency] = field(default_factory=dict)
    first_token: dict[int, Latency] = field(default_factory=dict)


def clients(urls: list[str], key: str) -> list[httpx.Client]:
    return [httpx.Client(base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=300) for u in urls]


def ingest(result: ModeResult, cs: list[httpx.Client], docs: int) -> None:
    """Warm up with a few other sheets, then upload ``docs`` sheets round-robin over ``cs`` and time them."""
    warm: list[str] = []
    for i, c in enumerate(cs):
        warm += upload(c, product_docs(WARMUP_DOCS // len(cs), start=100_000 + i * WARMUP_DOCS))
    wait_indexed(cs[0], warm, timeout_s=600)
    sheets = product_docs(docs)
    t0 = time.perf_counter()
    ids: list[str] = []
    for i in range(0, len(sheets), BATCH):
        ids += upload(cs[(i // BATCH) % len(cs)], sheets[i : i + BATCH])
    done = wait_indexed(cs[0], ids, timeout_s=3600, poll_s=0.25)
    result.ingest_s = time.perf_counter() - t0
    result.docs = sum(d["status"] == "indexed" for d in done.values())
    result.failed = len(done) - result.docs
    result.chunks = sum(d["chunk_count"] for d in done.values())
    print(f"{result.mode}: {result.docs} indexed ({result.failed} failed), {result.chunks} chunks in "
          f"{result.ingest_s:.1f} s", flush=True)


class Failed(Exception):
    """A request that got no timing: a status other than 200, no results, no token."""


async def _search(c: httpx.AsyncClient, q: str) -> float:
    t0 = time.perf_counter()
    r = await c.get("/api/v1/search", params={"q": q, "top_k": 5})
    if r.status_code != 200:
        raise Failed(f"search {r.status_code} {r.text[:200]}")
    if not r.json()["results"]:
        raise Failed("search: no results")
    return (time.perf_counter() - t0) * 1000


async def _first_token(c: httpx.AsyncClient, q: str) -> float:
    t0 = time.perf_counter()
    first = None
    async with c.stream("POST", "/api/v1/ask", json={"question": q}) as r:
        if r.status_code != 200:
            raise Failed(f"ask {r.status_code} {(await r.aread())[:200]!r}")
        async for line in r.aiter_lines():
            if first is None and line == "event: token":
                first = (time.perf_counter() - t0) * 1000
    if first is None:
        raise Failed("ask: no token event")
    return first


async def _level(
    urls: list[str],
    key: str,
    call: Callable[[httpx.AsyncClient, str], Awaitable[float]],
    questions: list[str],
    concurrency: int,
    total: int,
    timeout_s: float,
) -> Latency:
    out = Latency()
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    acs = [httpx.AsyncClient(base_url=u, headers={"Authorization": f"Bearer {key}"}, timeout=timeout_s,
                             limits=limits) for u in urls]  # fmt: skip
    next_k = iter(range(total))

    async def client() -> None:
        for k in next_k:
            try:
                out.ms.append(await call(acs[k % len(acs)], questions[k % len(questions)]))
            except Failed as exc:
                out.failures[str(exc)] += 1
            except httpx.HTTPError as exc:
                out.failures[f"{type(exc).__name__}: {exc}"[:200]] += 1

    t0 = time.perf_counter()
    try:
        await asyncio.gather(*(client() for _ in range(concurrency)))
    finally:
        for ac in acs:
            await ac.aclose()
    out.wall_s = time.perf_counter() - t0
    return out


def latencies(result: ModeResult, urls: list[str], key: str, args: argparse.Namespace) -> None:
    questions = product_questions(max(args.requests, 64), docs=args.docs)
    # Warm every API process (query embedder, first connections) before anything is timed.
    asyncio.run(_level(urls, key, _search, questions, len(urls), 4 * len(urls), args.timeout))
    asyncio.run(_level(urls, key, _first_token, questions, len(urls), 4 * len(urls), args.timeout))
    for level in args.levels:
        for name, call, into in (("search", _search, result.search), ("first token", _first_token,
                                                                      result.first_token)):
            lat = asyncio.run(_level(urls, key, call, questions, level, args.requests, args.timeout))
            into[level] = lat
            print(f"{result.mode} {name} x{level}: p50 {lat.pct(50):.0f} ms, p95 {lat.pct(95):.0f} ms, "
                  f"{len(lat.ms) / lat.wall_s:.1f}/s, {lat.errors} errors {dict(lat.failures) or ''}", flush=True)


def run_distributed(args: argparse.Namespace, tmp: Path) -> ModeResult:
    result = ModeResult("distributed (2 APIs, 2 workers)")
    pg_admin = os.environ.get("KBQA_TEST_PG_URL", "")
    redis_url = os.environ.get("KBQA_TEST_REDIS_URL", "")
    if not pg_admin or not redis_url:
        sys.exit("set KBQA_TEST_PG_URL and KBQA_TEST_REDIS_URL (`make services` writes .cache/test-services.env)")
    w_bin, m_bin = weaviate_binary(), minio_binary()
    for b in (w_bin, m_bin):
        if not b.is_file():
            sys.exit(f"{b} not built: run `bash scripts/build-go-servers.sh` (`make services` does)")
    with (
        scratch_pg_database(pg_admin, prefix="kbqa_bench_") as pg_url,
        run_minio(m_bin) as minio,
        run_stack(tmp, pg_url=pg_url, redis_url=redis_url, minio=minio, weaviate_binary=w_bin, env=MODE_ENV) as stack,
    ):
        for _ in range(2):
            stack.start_worker()
        urls = [stack.start_api(), stack.start_api()]
        key = stack.create_key(tenant=TENANT)
        cs = clients(urls, key)
        try:
            ingest(result, cs, args.docs)
        finally:
            for c in cs:
                c.close()
        latencies(result, urls, key, args)
    return result


def run_embedded(args: argparse.Namespace, tmp: Path) -> ModeResult:
    result = ModeResult("embedded (1 API)")
    with run_kbqa(tmp / "data", env=MODE_ENV) as server:
        key = server.create_key(tenant=TENANT, role="editor")
        cs = clients([server.url], key)
        try:
            ingest(result, cs, args.docs)
        finally:
            cs[0].close()
        latencies(result, [server.url], key, args)
    return result


def table(results: list[ModeResult], levels: list[int]) -> str:
    def f(v: float) -> str:
        return "-" if v != v else f"{v:.0f}"  # NaN: no successful request

    lines = [
        "| mode | ingest docs/s | ingest chunks/s | streams | search p50 / p95 ms | search req/s "
        "| first token p50 / p95 ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for i, level in enumerate(levels):
            s, t = r.search[level], r.first_token[level]
            ingest_cols = (f"{r.docs / r.ingest_s:.2f}", f"{r.chunks / r.ingest_s:.1f}") if i == 0 else ("", "")
            lines.append(
                f"| {r.mode if i == 0 else ''} | {ingest_cols[0]} | {ingest_cols[1]} | {level} "
                f"| {f(s.pct(50))} / {f(s.pct(95))} | {len(s.ms) / s.wall_s:.1f} "
                f"| {f(t.pct(50))} / {f(t.pct(95))} | {s.errors + t.errors} |"
            )
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--docs", type=int, default=200, help="product sheets ingested by each mode")
    ap.add_argument("--requests", type=int, default=64, help="searches, and as many questions, per concurrency level")
    ap.add_argument("--levels", default="1,8,32", help="concurrent clients, comma-separated")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds one request may take (then an error)")
    ap.add_argument("--modes", default="distributed,embedded", help="which modes to run, comma-separated")
    args = ap.parse_args()
    args.levels = [int(x) for x in args.levels.split(",")]
    modes = args.modes.split(",")
    results = []
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-dist-") as tmp:
        if "distributed" in modes:
            results.append(run_distributed(args, Path(tmp) / "distributed"))
        if "embedded" in modes:
            results.append(run_embedded(args, Path(tmp) / "embedded"))
    print(f"\n{args.docs} product sheets per mode, {args.requests} requests per level and kind, loopback, "
          f"{os.cpu_count()} cores; {time.perf_counter() - t0:.0f} s in all; 1-minute load average "
          f"{load0:.1f} at the start, {os.getloadavg()[0]:.1f} at the end\n")
    print(table(results, args.levels))
    failed = sum(r.failed for r in results)
    errors = sum(lat.errors for r in results for lat in (*r.search.values(), *r.first_token.values()))
    return 1 if failed or errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
