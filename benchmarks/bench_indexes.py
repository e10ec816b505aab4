"""Embedded index benchmark: build time, RSS and per-query latency for BM25 (tantivy) and dense (usearch + masks).

Usage: python benchmarks/bench_indexes.py [--n 100000] [--full] [--queries 300] [--dim 384]
``--full`` runs 1M chunks. Synthetic data: Zipf-distributed words from a 20k vocabulary (~80 words per chunk),
random unit vectors (the worst case for an HNSW graph), 10 chunks per document, 3 tenants, 5% of chunks ACL-restricted.
Pin cores to reproduce the deployment target, e.g. ``taskset -c 0,1 python benchmarks/bench_indexes.py``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.types import ChunkRecord, SearchFilter  # noqa: E402
from retrieval.keyword import TantivyKeywordIndex  # noqa: E402
from retrieval.vector import EmbeddedVectorIndex  # noqa: E402

PER_DOC = 10
BATCH_DOCS = 1000


def rss_mb() -> float:
    return psutil.Process().memory_info().rss / 2**20


def make_chunks(n: int, rng: np.random.Generator) -> list[ChunkRecord]:
    vocab = [f"w{i}" for i in range(20_000)]
    ranks = np.minimum(rng.zipf(1.2, size=n * 80), len(vocab)) - 1
    out = []
    for i in range(n):
        words = " ".join(vocab[r] for r in ranks[i * 80 : (i + 1) * 80])
        doc = i // PER_DOC
        out.append(
            ChunkRecord(
                id=f"c{i}",
                tenant_id=f"t{doc % 3}",
                document_id=f"d{doc}",
                document_version=1,
                title=f"Document {doc} {vocab[doc % 500]}",
                text=words,
                section_path=("Intro",),
                acl_groups=("restricted",) if doc % 20 == 0 else (),
                doc_type="manual" if doc % 2 else "faq",
            )
        )
    return out


def percentiles(fn: Callable[[int], object], count: int) -> tuple[float, float]:
    times = []
    for i in range(count):
        t0 = time.perf_counter()
        fn(i)
        times.append((time.perf_counter() - t0) * 1000)
    return float(np.percentile(times, 50)), float(np.percentile(times, 95))


OPEN = SearchFilter("t1")
ACL = SearchFilter("t1", acl_groups=("restricted",), doc_types=("faq",))
Docs = list[tuple[str, list[ChunkRecord]]]


def bench_bm25(path: Path, docs: Docs, queries: list[str], count: int) -> list[tuple[str, str]]:
    rows = []
    base = rss_mb()
    kw = TantivyKeywordIndex(path)
    t0 = time.perf_counter()
    for i in range(0, len(docs), BATCH_DOCS):
        kw.upsert_many(docs[i : i + BATCH_DOCS])
    rows.append(("bm25 build (s)", f"{time.perf_counter() - t0:.1f}"))
    rows.append(("bm25 RSS delta (MB)", f"{rss_mb() - base:.0f}"))
    p50, p95 = percentiles(lambda i: kw.search(queries[i], OPEN, 50), count)
    rows.append(("bm25 query k=50, tenant filter p50/p95 (ms)", f"{p50:.2f} / {p95:.2f}"))
    p50, p95 = percentiles(lambda i: kw.search(queries[i], ACL, 50), count)
    rows.append(("bm25 query k=50, acl+doc_type filter p50/p95 (ms)", f"{p50:.2f} / {p95:.2f}"))
    t0 = time.perf_counter()
    kw.upsert_document(docs[5][0], docs[5][1])
    rows.append(("bm25 single-document upsert incl. commit (ms)", f"{(time.perf_counter() - t0) * 1000:.1f}"))
    kw.close()
    return rows


def bench_dense(
    path: Path, docs: Docs, n: int, dim: int, count: int, rng: np.random.Generator
) -> list[tuple[str, str]]:
    rows = []
    base = rss_mb()
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    vec_mb = rss_mb() - base
    dense = EmbeddedVectorIndex(path, dim)
    t0 = time.perf_counter()
    for i in range(0, len(docs), BATCH_DOCS):
        lo = i * PER_DOC
        part = [
            (d, cs, vectors[lo + j * PER_DOC : lo + j * PER_DOC + len(cs)])
            for j, (d, cs) in enumerate(docs[i : i + BATCH_DOCS])
        ]
        dense.upsert_many(part)
    rows.append(("dense build incl. HNSW (s)", f"{time.perf_counter() - t0:.1f}"))
    rows.append(("dense RSS delta, excl. input vectors (MB)", f"{rss_mb() - base - vec_mb:.0f}"))
    src = rng.integers(0, n, size=count)
    qs = vectors[src] + 0.02 * rng.standard_normal((count, dim))  # near a stored vector
    hits = [dense.search(qs[i], SearchFilter(f"t{(src[i] // PER_DOC) % 3}"), 1) for i in range(count)]
    found = np.mean([bool(h) and h[0].chunk_id == f"c{src[i]}" for i, h in enumerate(hits)])
    rows.append(("dense top-1 is the perturbed source vector (HNSW path)", f"{found:.3f}"))
    few = SearchFilter("t1", document_ids=tuple(f"d{d}" for d in range(1, 300, 3)))
    for label, flt in (
        ("tenant filter (HNSW+mask)", OPEN),
        ("acl+doc_type filter (1/6 admitted)", ACL),
        ("100 documents (exact subset)", few),
    ):
        p50, p95 = percentiles(lambda i, f=flt: dense.search(qs[i], f, 50), count)
        rows.append((f"dense query k=50, {label} p50/p95 (ms)", f"{p50:.2f} / {p95:.2f}"))
    t0 = time.perf_counter()
    dense.close()
    rows.append(("dense checkpoint on close (s)", f"{time.perf_counter() - t0:.1f}"))
    dense = qs = vectors = None  # release memory before measuring the reopened index
    base = rss_mb()
    t0 = time.perf_counter()
    again = EmbeddedVectorIndex(path, dim)
    rows.append(("dense reopen from snapshot (s)", f"{time.perf_counter() - t0:.1f}"))
    rows.append(("dense RSS delta of reopened index (MB)", f"{rss_mb() - base:.0f}"))
    rows.append(("process peak RSS (MB)", f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f}"))
    again.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--full", action="store_true", help="1M chunks")
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--dim", type=int, default=384)
    args = ap.parse_args()
    n = 1_000_000 if args.full else args.n
    rng = np.random.default_rng(0)
    rows: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    chunks = make_chunks(n, rng)
    print(f"generated {n} chunks in {time.perf_counter() - t0:.1f}s, RSS {rss_mb():.0f} MB", flush=True)
    docs = [(chunks[i].document_id, chunks[i : i + PER_DOC]) for i in range(0, n, PER_DOC)]
    queries = [" ".join(f"w{int(r)}" for r in rng.integers(0, 2000, size=4)) for _ in range(args.queries)]

    with tempfile.TemporaryDirectory() as tmp:
        rows += bench_bm25(Path(tmp) / "bm25", docs, queries, args.queries)
        rows += bench_dense(Path(tmp) / "dense", docs, n, args.dim, args.queries, rng)

    width = max(len(r[0]) for r in rows)
    print(f"\n{n} chunks, dim {args.dim}, {psutil.cpu_count()} CPUs visible")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")


if __name__ == "__main__":
    main()
