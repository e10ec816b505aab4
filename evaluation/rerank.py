"""The sentence reranker (``retrieval.reranker = "sentence"``) against fused order, on every set, with its latency.

Usage::

    python -m evaluation.rerank [--eval-dir ../shared/eval] [--sets scifact,hotpotqa100,squad2,squad1] \
        [--every scifact=3] [--latency-queries 20] \
        [--latency-sets scifact,hotpotqa100] [--reuse-sets]

Per set (the subsamples of :mod:`evaluation.lodo`) the real :class:`retrieval.hybrid.HybridRetriever` (default
settings, no reranker) gives each query's fused top 100 with fused scores. The sentences of every chunk that reaches
a top 30 are embedded once (cached on disk like the corpus embeddings); each variant of the reranker (candidates
N, sentences averaged ``top``, ``fused_weight``, ``max_sentences``) is then scored offline with the same functions
the reranker and the hybrid retriever use (``retrieval.rerank.select_sentences``, ``retrieval.rerank.top_mean``,
``retrieval.hybrid.blend``). Tables:

1. nDCG@10 per set for fused order and each variant, with its gain over fused on the worst set;
2. leave one dataset out: the variant chosen on the other sets, scored on the held-out one;
3. latency of the real ``SentenceReranker.score`` per query (p50/p95 ms) at N = 20, 30, 50 on the first
   ``--latency-queries`` queries of the ``--latency-sets`` (no cache: every call embeds its sentences).

``python -m evaluation.retrieval --configs hybrid,hybrid+rerank --reranker sentence`` runs the shipped
configuration end to end through the retriever.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import logging
import pickle
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.settings import RetrievalSettings
from core.types import SearchFilter
from evaluation.backends import default_embedder
from evaluation.beir import EVAL_TENANT, BeirDataset, cache_key, cached_array
from evaluation.lodo import DATASETS, default_eval_dir, load_set
from evaluation.metrics import mean_metrics
from evaluation.retrieval import build_indexes, default_cache_dir
from retrieval.hybrid import HybridRetriever, blend, passage_text
from retrieval.null import NullGraphIndex
from retrieval.protocols import Embedder
from retrieval.rerank import SentenceReranker, query_terms, select_sentences, split_sentences, top_mean

log = logging.getLogger(__name__)

MAX_N = 30
MAX_WORDS = 48  # the shipped sentence_rerank_max_words; variants below change the rest


@dataclass(frozen=True, slots=True)
class Variant:
    n: int
    top: int
    fused_weight: float
    max_sentences: int

    @property
    def label(self) -> str:
        return f"N={self.n},top={self.top},w={self.fused_weight:g},cap={self.max_sentences}"


VARIANTS = [Variant(n, top, w, cap) for n, top, w, cap in itertools.product(
    (10, 20, 30), (1, 2, 3), (0.0, 0.5, 1.0, 2.0, 4.0), (4, 8))]
#: The shipped defaults of the sentence reranker (RetrievalSettings).
SHIPPED = Variant(30, 1, 4.0, 4)


@dataclass(slots=True)
class SetData:
    name: str
    ds: BeirDataset
    fused: dict[str, list[tuple[str, float]]]  # query id -> (chunk id, fused score), best first
    sentences: dict[str, list[str]]  # chunk id -> its sentences
    sims: dict[str, dict[str, np.ndarray]]  # query id -> chunk id -> cosine per sentence
    latency: dict[int, tuple[float, float, float]]  # N -> (p50, p95 wall ms, p50 CPU ms) of SentenceReranker.score


def fused_runs(ds: BeirDataset, workdir: Path, embedder: Embedder, cache_dir: Path | None) -> dict[
        str, list[tuple[str, float]]]:
    idx = build_indexes(ds, workdir, embedder, cache_dir=cache_dir, extract_entities=None)
    base = RetrievalSettings()
    settings = base.model_copy(update={"candidates": 100, "timeout_s": 60.0})
    retriever = HybridRetriever(idx.keyword, idx.vector, NullGraphIndex(), embedder, idx.store, settings, max_workers=4)
    flt = SearchFilter(tenant_id=EVAL_TENANT)

    async def run() -> dict[str, list[tuple[str, float]]]:
        out = {}
        for qid, text in ds.queries.items():
            res = await retriever.retrieve(text, flt, 100)
            out[qid] = [(c.chunk.id, c.score) for c in res.chunks]
        return out

    try:
        return asyncio.run(run())
    finally:
        retriever.close()


def collect(name: str, eval_dir: Path, cache_dir: Path | None, embedder: Embedder, every: int = 1) -> SetData:
    ds = load_set(eval_dir, name)
    if every > 1:  # a further subsample on top of evaluation.lodo's (to bound the sentences to embed)
        keep = list(ds.queries)[::every]
        ds.queries = {q: ds.queries[q] for q in keep}
        ds.qrels = {q: ds.qrels[q] for q in keep}
    t = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="kbqa-rerank-") as tmp:
        fused = fused_runs(ds, Path(tmp), embedder, cache_dir)
    log.info("%s: fused runs in %.1fs", name, time.perf_counter() - t)
    by_id = {c.id: c for c in ds.chunks}
    needed = sorted({cid for hits in fused.values() for cid, _ in hits[:MAX_N]})
    sentences = {cid: split_sentences(passage_text(by_id[cid]), max_words=MAX_WORDS) for cid in needed}
    flat = list(dict.fromkeys(s for cid in needed for s in sentences[cid]))
    t = time.perf_counter()
    key = cache_key("sent", embedder.model_name, embedder.model_version, ds.corpus_hash, str(MAX_WORDS),
                    cache_key(*needed), "v1")
    encode = getattr(embedder, "embed_queries", embedder.embed_documents)  # batched, as the reranker embeds them
    vectors = cached_array(cache_dir, key, len(flat), lambda: encode(flat))
    log.info("%s: %d sentences of %d chunks in %.1fs", name, len(flat), len(needed), time.perf_counter() - t)
    row = {s: i for i, s in enumerate(flat)}
    sims: dict[str, dict[str, np.ndarray]] = {}
    for qid, text in ds.queries.items():
        q = embedder.embed_query(text)
        sims[qid] = {cid: vectors[[row[s] for s in sentences[cid]]] @ q if sentences[cid] else np.zeros(0)
                     for cid, _ in fused[qid][:MAX_N]}
    return SetData(name, ds, fused, sentences, sims, {})


def measure_latency(data: SetData, embedder: Embedder, queries: int) -> None:
    """``SentenceReranker.score`` (shipped defaults, no cache) on the fused top N of the first ``queries`` queries."""
    by_id = {c.id: c for c in data.ds.chunks}
    reranker = SentenceReranker(embedder)
    for n in (20, 30, 50):
        ms, cpu = [], []
        for qid in list(data.ds.queries)[:queries]:
            passages = [passage_text(by_id[cid]) for cid, _ in data.fused[qid][:n]]
            t, c = time.perf_counter(), time.process_time()
            reranker.score(data.ds.queries[qid], passages)
            ms.append((time.perf_counter() - t) * 1000.0)
            cpu.append((time.process_time() - c) * 1000.0)  # all threads: what the call costs the cores
        data.latency[n] = (float(np.percentile(ms, 50)), float(np.percentile(ms, 95)), float(np.percentile(cpu, 50)))
        log.info("%s: N=%d p50 %.0f ms p95 %.0f ms, CPU p50 %.0f ms", data.name, n, *data.latency[n])


def rerank_run(data: SetData, v: Variant) -> dict[str, list[str]]:
    run = {}
    for qid, hits in data.fused.items():
        head, tail = hits[: v.n], hits[v.n :]
        terms = query_terms(data.ds.queries[qid])
        scores = []
        for cid, _ in head:
            keep = select_sentences(terms, data.sentences[cid], v.max_sentences)
            scores.append(top_mean([float(data.sims[qid][cid][i]) for i in keep], v.top))
        final = blend(scores, [s for _, s in head], v.fused_weight)
        order = sorted(range(len(head)), key=lambda i: (-final[i], i))
        run[qid] = [head[i][0] for i in order] + [cid for cid, _ in tail]
    return run


def ndcg(data: SetData, run: dict[str, list[str]]) -> float:
    return mean_metrics(run, data.ds.qrels, [("ndcg", 10)])["ndcg@10"]


def report(sets: Sequence[SetData]) -> str:
    names = [d.name for d in sets]
    base = {d.name: ndcg(d, {q: [c for c, _ in h] for q, h in d.fused.items()}) for d in sets}
    scores = {v: {d.name: ndcg(d, rerank_run(d, v)) for d in sets} for v in VARIANTS}
    lines = ["| nDCG@10 | " + " | ".join(names) + " | mean | worst gain |", "|---" * (len(names) + 3) + "|"]
    lines.append("| fused (no rerank) | " + " | ".join(f"{base[n]:.4f}" for n in names)
                 + f" | {np.mean(list(base.values())):.4f} | - |")
    for v in sorted(VARIANTS, key=lambda v: -min(scores[v][n] - base[n] for n in names)):
        cells = " | ".join(f"{scores[v][n]:.4f}" for n in names)
        worst = min(scores[v][n] - base[n] for n in names)
        mark = " (shipped settings)" if v == SHIPPED else ""
        lines.append(f"| {v.label}{mark} | {cells} | {np.mean(list(scores[v].values())):.4f} | {worst:+.4f} |")
    lines += ["", "| held out | variant chosen on the others | its nDCG@10 | fused | gain |", "|---|---|---|---|---|"]
    for held in names:
        others = [n for n in names if n != held] or [held]
        pick = max(VARIANTS, key=lambda v: float(np.mean([scores[v][n] for n in others])))
        lines.append(f"| {held} | {pick.label} | {scores[pick][held]:.4f} | {base[held]:.4f} | "
                     f"{scores[pick][held] - base[held]:+.4f} |")
    lines += ["", "| SentenceReranker.score per query: wall p50 / p95 ms (CPU p50 ms) | N=20 | N=30 | N=50 |",
              "|---|---|---|---|"]
    for d in sets:
        if d.latency:
            lines.append(f"| {d.name} | " + " | ".join(
                f"{d.latency[n][0]:.0f} / {d.latency[n][1]:.0f} ({d.latency[n][2]:.0f})" for n in (20, 30, 50)) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evaluation.rerank", description=__doc__.splitlines()[0])
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--sets", default=",".join(DATASETS))
    ap.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    ap.add_argument("--latency-queries", type=int, default=20)
    ap.add_argument("--latency-sets", default="scifact,hotpotqa100",
                    help="sets whose latency is measured (empty: none)")
    ap.add_argument("--every", default="", metavar="SET=N,...",
                    help="keep every n-th query of these sets (on top of evaluation.lodo's subsample), e.g. scifact=3")
    ap.add_argument("--reuse-sets", action="store_true", help="reuse each set's collected runs and sentence scores")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    embedder = default_embedder()
    every = {k: int(v) for k, _, v in (e.partition("=") for e in args.every.split(",") if e)}
    sets = []
    for name in (n for n in args.sets.split(",") if n):  # one set at a time, each kept for --reuse-sets
        n_every = every.get(name, 1)
        parts = (name, embedder.model_version) + ((str(n_every),) if n_every > 1 else ()) + ("v1",)
        path = args.cache_dir / f"rerank-set-{cache_key(*parts)}.pkl"
        if args.reuse_sets and path.exists():
            sets.append(pickle.loads(path.read_bytes()))  # noqa: S301 - our own cache file
        else:
            sets.append(collect(name, args.eval_dir, args.cache_dir, embedder, n_every))
        if name in args.latency_sets.split(",") and args.latency_queries and not sets[-1].latency:
            measure_latency(sets[-1], embedder, args.latency_queries)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(pickle.dumps(sets[-1]))
    print(report(sets))


if __name__ == "__main__":
    main()
