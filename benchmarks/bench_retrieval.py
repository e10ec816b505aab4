"""Fused retrieval latency on synthetic chunks: per-index p50/p95 and the hybrid (default settings: z-score fusion,
title links, no graph, no rerank) on top, then the same with the graph stage.

Usage: python benchmarks/bench_retrieval.py [--n 100000] [--full] [--queries 200]

``--full`` runs 1,000,000 chunks (about 1.5 GB of vectors; long build). Chunks are 60 words drawn from a Zipf
vocabulary, each mentioning 3 names of a 20k-entity vocabulary, 20 chunks per document. Vectors are random unit
vectors (384-d) and a query vector is a corpus vector plus noise, so the embedder cost is *not* in these numbers
(MiniLM on CPU adds its own query-embedding time). Queries take 5 words and one entity name of a random chunk.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.settings import RetrievalSettings  # noqa: E402
from core.types import ChunkRecord, SearchFilter  # noqa: E402
from evaluation.backends import build_graph, build_keyword, build_vector  # noqa: E402
from evaluation.beir import DictChunkStore  # noqa: E402
from retrieval.hybrid import HybridRetriever  # noqa: E402
from retrieval.null import NullGraphIndex  # noqa: E402

DIM = 384
TENANT = "bench"
CHUNKS_PER_DOC = 20


class LookupEmbedder:
    """Returns the precomputed vector of a benchmark query (no model: embedding cost is excluded on purpose)."""

    model_name = "lookup"
    model_version = "1"
    dim = DIM

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    def embed_query(self, text: str) -> np.ndarray:
        return self.table[text]

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([self.table[t] for t in texts])

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def synthetic(n: int, seed: int = 7) -> tuple[list[ChunkRecord], list[list[str]], np.ndarray]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(30_000)])
    entities = np.array([f"entity {i}" for i in range(20_000)])
    word_ids = np.minimum(rng.zipf(1.3, size=(n, 60)) - 1, len(vocab) - 1)
    ent_ids = rng.integers(0, len(entities), size=(n, 3))
    chunks, ents = [], []
    for i in range(n):
        names = list(entities[ent_ids[i]])
        text = " ".join(vocab[word_ids[i]]) + " " + " ".join(names)
        doc = i // CHUNKS_PER_DOC
        chunks.append(ChunkRecord(id=f"c{i}", tenant_id=TENANT, document_id=f"d{doc}", document_version=1,
                                  title=f"doc {doc}", text=text, order=i % CHUNKS_PER_DOC))
        ents.append([str(x) for x in names])
    vecs = rng.standard_normal((n, DIM), dtype=np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return chunks, ents, vecs


def percentiles(ms: list[float]) -> str:
    a = np.asarray(ms)
    return f"{np.percentile(a, 50):8.2f} {np.percentile(a, 95):8.2f}"


def timed(fn: Callable[[], object], runs: int) -> list[float]:
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--full", action="store_true", help="1,000,000 chunks")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    n = 1_000_000 if args.full else args.n
    rng = np.random.default_rng(11)
    t = time.perf_counter()
    chunks, ents, vecs = synthetic(n)
    print(f"generated {n} chunks in {time.perf_counter() - t:.1f}s")
    picks = rng.integers(0, n, size=args.queries)
    queries, table = [], {}
    for i in picks:
        words = chunks[i].text.split()
        q = " ".join(rng.choice(words[:60], 5)) + " " + ents[i][0] + f" #{len(queries)}"
        v = vecs[i] + rng.standard_normal(DIM).astype(np.float32) * 0.05
        table[q] = (v / np.linalg.norm(v)).astype(np.float32)
        queries.append(q)
    flt = SearchFilter(tenant_id=TENANT)
    settings = RetrievalSettings(timeout_s=30.0)
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-") as tmp:
        builds = {}
        t = time.perf_counter()
        kw = build_keyword(Path(tmp) / "kw", chunks)
        builds["keyword"] = time.perf_counter() - t
        t = time.perf_counter()
        vec = build_vector(Path(tmp) / "vec", chunks, vecs, DIM)
        builds["vector"] = time.perf_counter() - t
        t = time.perf_counter()
        graph = build_graph(Path(tmp) / "graph", chunks, ents, timeout_s=30.0)
        builds["graph"] = time.perf_counter() - t
        print("build s: " + ", ".join(f"{k} {v:.1f}" for k, v in builds.items()))
        k = settings.candidates
        rows = {
            "keyword (tantivy)": [x for q in queries for x in timed(lambda q=q: kw.search(q, flt, k), 1)],
            "vector (ann)": [x for q in queries for x in timed(lambda q=q: vec.search(table[q], flt, k), 1)],
            "graph (ppr)": [x for q in queries for x in timed(lambda q=q: graph.search(q, flt, k), 1)],
        }
        store = DictChunkStore(chunks)

        async def fused(hybrid: HybridRetriever) -> list[float]:
            out = []
            for q in queries:
                t0 = time.perf_counter()
                res = await hybrid.retrieve(q, flt, settings.top_k)
                out.append((time.perf_counter() - t0) * 1000.0)
                assert not res.degraded, res.degraded
            return out

        # the default (keyword + vector, title links, no graph), then with the graph stage as a deployment can add it
        for name, g in (("hybrid fused (default)", NullGraphIndex()), ("hybrid fused + graph", graph)):
            hybrid = HybridRetriever(kw, vec, g, LookupEmbedder(table), store, settings)
            asyncio.run(hybrid.retrieve(queries[0], flt, settings.top_k))  # warm the pool
            rows[name] = asyncio.run(fused(hybrid))
            hybrid.close()
        print(f"\n{n} chunks, {len(queries)} queries, k={k} candidates per index, top_k={settings.top_k}")
        print(f"{'stage':28s} {'p50 ms':>8s} {'p95 ms':>8s}")
        for name, ms in rows.items():
            print(f"{name:28s} {percentiles(ms)}")
        for idx in (kw, vec, graph):
            idx.close()


if __name__ == "__main__":
    main()
