"""Retrieval evaluation on BEIR-format datasets: one row per configuration.

Usage::

    python -m evaluation.retrieval --dataset ../shared/eval/beir_scifact [--configs bm25,dense,hybrid] \
        [--entities ingestion.entities:EntityExtractor] \
        [--weaviate-url http://127.0.0.1:8080 --weaviate-grpc-port 50051]

Configurations: ``bm25``, ``dense``, ``graph``, ``hybrid`` (bm25 + dense), ``hybrid+rerank``, ``hybrid+graph``,
``hybrid+graph+rerank`` (``--reranker sentence`` needs no model folder; ``--stride n`` keeps every n-th query).
Each runs the real :class:`retrieval.hybrid.HybridRetriever` with null indexes for the stages it leaves out, over temp
embedded indexes built from the corpus (with ``--weaviate-url``, the keyword index is a temp collection on that
Weaviate server instead, dropped afterwards; rows are then labelled ``<config>@weaviate``). Corpus embeddings and
extracted entities are cached under ``cache_dir`` (keyed by model version + corpus hash), so reruns only pay for the
queries.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.settings import IngestionSettings, RetrievalSettings, Settings
from core.types import SearchFilter
from evaluation.backends import build_graph, build_keyword, build_vector, build_weaviate_keyword, default_embedder
from evaluation.beir import (
    EVAL_TENANT,
    BeirDataset,
    DictChunkStore,
    cache_key,
    cached_array,
    cached_json,
    documents_ranked,
    load_beir,
    split_like_ingestion,
)
from evaluation.metrics import mean_metrics
from retrieval.hybrid import HybridRetriever
from retrieval.null import NullGraphIndex, NullKeywordIndex, NullVectorIndex
from retrieval.protocols import Embedder, GraphIndex, KeywordIndex, Reranker, VectorIndex
from retrieval.rerank import build_reranker
from retrieval.sentences import SentenceVectorIndex, chunk_sentences, per_chunk_rows

log = logging.getLogger(__name__)

CONFIGS: tuple[str, ...] = ("bm25", "dense", "graph", "hybrid", "hybrid+rerank", "hybrid+graph", "hybrid+graph+rerank")
MEASURES = [("ndcg", 10), ("recall", 10), ("recall", 100), ("mrr", 10)]
#: documents in each query's run (Recall@100 needs 100)
RUN_DEPTH = 100
#: Entities of one text: normalised entity names (the graph index's input).
EntityExtractor = Callable[[Sequence[str]], list[list[str]]]


def default_cache_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_CACHE", Path.home() / ".cache" / "kbqa" / "eval"))


@dataclass(slots=True)
class EvalRow:
    config: str
    metrics: dict[str, float]
    latency_ms: dict[str, tuple[float, float]]  # stage -> (p50, p95)
    degraded: int = 0
    note: str = ""


@dataclass(slots=True)
class EvalTable:
    dataset: str
    n_queries: int
    n_docs: int
    rows: list[EvalRow] = field(default_factory=list)

    def format(self) -> str:
        cols = sorted({m for r in self.rows for m in r.metrics}, key=_metric_order)
        stages = [s for s in ("keyword", "vector", "graph", "fuse", "hop2", "links", "rerank", "total")
                  if any(s in r.latency_ms for r in self.rows)]
        head = ["config", *cols, *(f"{s} p50/p95 ms" for s in stages), "degraded"]
        lines = [f"{self.dataset}: {self.n_queries} queries, {self.n_docs} docs", " | ".join(head)]
        for r in self.rows:
            cells = [r.config, *(f"{r.metrics[c]:.4f}" if c in r.metrics else "-" for c in cols)]
            cells += [_ms(r.latency_ms.get(s)) for s in stages]
            cells.append(str(r.degraded) + (f" ({r.note})" if r.note else ""))
            lines.append(" | ".join(cells))
        return "\n".join(lines)


def _ms(p: tuple[float, float] | None) -> str:
    return f"{p[0]:.1f}/{p[1]:.1f}" if p else "-"


def _metric_order(name: str) -> tuple[int, int]:
    metric, k = name.split("@")
    return (["ndcg", "recall", "mrr", "all_rel"].index(metric), int(k))


def _percentiles(values: list[float]) -> tuple[float, float]:
    arr = np.asarray(values, dtype=np.float64)
    return float(np.percentile(arr, 50)), float(np.percentile(arr, 95))


def extractor_id(fn: object) -> str:
    """Cache identity of an entity extractor: its class (or function) plus its model and options when it has them."""
    kind = fn if callable(fn) and hasattr(fn, "__qualname__") else type(fn)
    opts = ":".join(f"{a}={getattr(fn, a)}" for a in ("model", "noun_chunks", "max_entities") if hasattr(fn, a))
    return f"{kind.__module__}.{kind.__qualname__}:{opts}"


@dataclass(slots=True)
class EvalIndexes:
    keyword: KeywordIndex
    vector: VectorIndex
    graph: GraphIndex | None
    store: DictChunkStore


def build_indexes(
    ds: BeirDataset,
    workdir: Path,
    embedder: Embedder,
    *,
    cache_dir: Path | None,
    extract_entities: EntityExtractor | None,
    with_vectors: bool = True,
    weaviate: tuple[str, int] | None = None,
    sentence_weight: float = 0.0,
) -> EvalIndexes:
    """Index ``ds`` into temp embedded indexes under ``workdir`` (embeddings and entities from the cache if present).

    ``with_vectors=False`` skips embedding the corpus (a null vector index stands in). ``weaviate=(url, grpc_port)``
    puts the keyword index in a temp collection on that server (the caller drops it). ``sentence_weight > 0``: the
    sentences of every chunk are embedded too (cached) and the vector index scores a chunk with its best sentence
    (:class:`retrieval.sentences.SentenceVectorIndex`, candidates as many as a run needs)."""
    chunks = ds.chunks
    t = time.perf_counter()
    if weaviate is not None:
        keyword = build_weaviate_keyword(weaviate[0], weaviate[1], chunks, embedder.dim)
    else:
        keyword = build_keyword(workdir / "keyword", chunks)
    log.info("keyword index: %d docs in %.1fs", len(chunks), time.perf_counter() - t)
    vector: VectorIndex = NullVectorIndex(embedder.dim)
    if with_vectors:
        corpus, *split = ds.cache_parts()
        key = cache_key("emb", embedder.model_name, embedder.model_version, corpus, "v1", *split)
        t = time.perf_counter()
        vectors = cached_array(
            cache_dir, key, len(chunks), lambda: embedder.embed_documents([ds.embed_text(c) for c in chunks])
        )
        vector = build_vector(workdir / "vector", chunks, np.asarray(vectors, dtype=np.float32), embedder.dim)
        log.info("vector index: %d docs in %.1fs", len(chunks), time.perf_counter() - t)
        if sentence_weight > 0:
            vector = SentenceVectorIndex(vector, sentence_vectors(ds, embedder, cache_dir), weight=sentence_weight,
                                         candidates=ds.chunk_depth(RUN_DEPTH))
    graph = None
    if extract_entities is not None:
        t = time.perf_counter()
        ents = cached_json(cache_dir, cache_key("ents", extractor_id(extract_entities), *ds.cache_parts()),
                           lambda: extract_entities([ds.embed_text(c) for c in chunks]))
        graph = build_graph(workdir / "graph", chunks, ents)  # type: ignore[arg-type]
        log.info("graph index: %d docs in %.1fs", len(chunks), time.perf_counter() - t)
    return EvalIndexes(keyword, vector, graph, DictChunkStore(chunks))


def sentence_vectors(ds: BeirDataset, embedder: Embedder, cache_dir: Path | None) -> dict[str, np.ndarray]:
    """Chunk id -> the embeddings of its sentences (:func:`retrieval.sentences.chunk_sentences` of the text the
    embedder sees), cached under a key of the model and the sentences themselves."""
    per_chunk = [chunk_sentences(ds.embed_text(c)) for c in ds.chunks]
    flat = [s for sentences in per_chunk for s in sentences]
    key = cache_key("sentences", embedder.model_name, embedder.model_version, cache_key(*flat))
    t = time.perf_counter()
    vectors = np.asarray(cached_array(cache_dir, key, len(flat), lambda: embedder.embed_documents(flat)),
                         dtype=np.float32)
    log.info("sentence vectors: %d sentences in %.1fs", len(flat), time.perf_counter() - t)
    return {c.id: rows for c, rows in zip(ds.chunks, per_chunk_rows(vectors, per_chunk), strict=True)}


def _retriever_for(
    config: str, idx: EvalIndexes, embedder: Embedder, settings: RetrievalSettings, reranker: Reranker | None
) -> HybridRetriever:
    parts = set(config.split("+"))
    use_kw = bool(parts & {"bm25", "hybrid"})
    use_vec = bool(parts & {"dense", "hybrid"})
    use_graph = "graph" in parts
    if use_graph and idx.graph is None:
        raise ValueError("graph configurations need an entity extractor")
    return HybridRetriever(
        idx.keyword if use_kw else NullKeywordIndex(),
        idx.vector if use_vec else NullVectorIndex(embedder.dim),
        idx.graph if use_graph and idx.graph is not None else NullGraphIndex(),
        embedder,
        idx.store,
        settings,
        reranker if "rerank" in parts else None,
        max_workers=4,
    )


async def _run_queries(
    retriever: HybridRetriever, ds: BeirDataset, depth: int
) -> tuple[dict[str, list[str]], dict[str, list[float]], int]:
    flt = SearchFilter(tenant_id=EVAL_TENANT)
    run: dict[str, list[str]] = {}
    timings: dict[str, list[float]] = {}
    degraded = 0
    for qid, text in ds.queries.items():
        res = await retriever.retrieve(text, flt, ds.chunk_depth(depth))
        run[qid] = documents_ranked([c.chunk.document_id for c in res.chunks])[:depth]
        degraded += bool(res.degraded)
        for stage, ms in res.timings_ms.items():
            timings.setdefault(stage, []).append(ms)
    return run, timings, degraded


def evaluate_config(
    config: str, ds: BeirDataset, idx: EvalIndexes, embedder: Embedder, settings: RetrievalSettings,
    reranker: Reranker | None, *, multi_hop: bool,
) -> EvalRow:
    retriever = _retriever_for(config, idx, embedder, settings, reranker)
    try:
        run, timings, degraded = asyncio.run(_run_queries(retriever, ds, depth=RUN_DEPTH))
    finally:
        retriever.close()
    measures = MEASURES + ([("all_rel", 10)] if multi_hop else [])
    parts = set(config.split("+"))
    # Report only the stages this configuration really ran (a null index still "runs", in ~0 ms).
    active = {"fuse", "total"} | ({"keyword"} if parts & {"bm25", "hybrid"} else set()) | (
        {"vector"} if parts & {"dense", "hybrid"} else set()) | ({"graph"} if "graph" in parts else set()) | (
        {"rerank"} if "rerank" in parts else set()) | {"hop2", "links"}
    latency = {s: _percentiles(v) for s, v in timings.items() if s in active}
    return EvalRow(config, mean_metrics(run, ds.qrels, measures), latency, degraded)


def run_retrieval_eval(
    dataset_dir: Path,
    configs: Sequence[str] = CONFIGS,
    *,
    settings: RetrievalSettings | None = None,
    embedder: Embedder | None = None,
    extract_entities: EntityExtractor | None = None,
    reranker: Reranker | None = None,
    cache_dir: Path | None = None,
    max_queries: int | None = None,
    stride: int = 1,
    weaviate: tuple[str, int] | None = None,
    split: IngestionSettings | None = None,
    sentence_weight: float = 0.0,
) -> EvalTable:
    """Evaluate each configuration on the BEIR dataset in ``dataset_dir`` and return the table.

    ``settings`` supplies fusion weights, ``rrf_k`` and timeouts (``candidates`` is raised to the chunks a run of
    ``RUN_DEPTH`` documents needs: 100 for Recall@100, 300 when split).
    ``extract_entities`` is needed for the graph configurations (the CLI's ``--entities`` names ingestion's spaCy
    extractor). ``reranker`` is used by ``+rerank`` configurations; without one they are
    reported as skipped. ``cache_dir=None`` disables the cache. ``weaviate=(url, grpc_port)``: BM25 on that server.
    ``split``: each document is split into chunks as ingestion with these settings splits an upload, and a document
    ranks where its best chunk does (without it each document is one chunk, embedded whole up to the embedder's limit).
    ``sentence_weight``: the dense list scores a chunk with its best sentence too (see :func:`build_indexes`).
    """
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise ValueError(f"unknown configurations {unknown}; choose from {list(CONFIGS)}")
    embedder = embedder or default_embedder()
    ds = load_beir(dataset_dir, max_queries=max_queries)
    if split is not None:
        ds = split_like_ingestion(ds, embedder.count_tokens, target_tokens=split.chunk_target_tokens,
                                  overlap_tokens=split.chunk_overlap_tokens, table_max_tokens=split.table_max_tokens)
    base = settings or RetrievalSettings()
    settings = base.model_copy(update={"candidates": max(base.candidates, ds.chunk_depth(RUN_DEPTH)),
                                       "timeout_s": max(base.timeout_s, 30.0)})
    if stride > 1:  # the subsample evaluation.lodo uses for the SQuAD sets
        keep = list(ds.queries)[::stride]
        ds.queries = {q: ds.queries[q] for q in keep}
        ds.qrels = {q: ds.qrels[q] for q in keep}
    multi_hop = all(len(r) >= 2 for r in ds.qrels.values())
    needs_graph = any("graph" in c.split("+") for c in configs)
    needs_vectors = any(set(c.split("+")) & {"dense", "hybrid"} for c in configs)
    table = EvalTable(ds.name, len(ds.queries), len(ds.chunks))
    with tempfile.TemporaryDirectory(prefix="kbqa-eval-") as tmp:
        idx = build_indexes(ds, Path(tmp), embedder, cache_dir=cache_dir,
                            extract_entities=extract_entities if needs_graph else None, with_vectors=needs_vectors,
                            weaviate=weaviate, sentence_weight=sentence_weight)
        try:
            for config in configs:
                if "rerank" in config and reranker is None:
                    table.rows.append(EvalRow(config, {}, {}, note="skipped: no reranker configured"))
                    continue
                if "graph" in config and idx.graph is None:
                    table.rows.append(EvalRow(config, {}, {}, note="skipped: no entity extractor"))
                    continue
                row = evaluate_config(config, ds, idx, embedder, settings, reranker, multi_hop=multi_hop)
                if weaviate is not None:
                    row.config += "@weaviate"
                table.rows.append(row)
        finally:
            if weaviate is not None:
                idx.keyword.drop()  # type: ignore[attr-defined]
                idx.keyword.close()  # type: ignore[attr-defined]
    return table


def main(argv: Sequence[str] | None = None, *, extract_entities: EntityExtractor | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evaluation.retrieval", description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", type=Path, required=True, help="BEIR-format folder")
    ap.add_argument("--configs", default=",".join(CONFIGS))
    ap.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    ap.add_argument("--max-queries", type=int, default=None)
    ap.add_argument("--stride", type=int, default=1,
                    help="keep every n-th query (evaluation.lodo uses 10 for SQuAD v2 dev-half, 20 for SQuAD v1.1)")
    ap.add_argument("--weights", default=None, help="keyword,vector,graph fusion weights, e.g. 1,1,0.5")
    ap.add_argument("--rrf-k", type=int, default=None)
    ap.add_argument("--fusion", default=None, help="fusion method (retrieval.fusion.FUSION_METHODS)")
    ap.add_argument("--multi-hop", action="store_true", help="turn the second hop on (RetrievalSettings.multi_hop)")
    ap.add_argument("--title-links", choices=["on", "off"], default=None,
                    help="title links (RetrievalSettings.title_links; default: the setting's default)")
    ap.add_argument("--reranker", choices=["sentence", "cross-encoder", "flag"], default=None,
                    help="reranker for '+rerank' configurations (cross-encoder and flag need --reranker-path)")
    ap.add_argument("--rerank-candidates", type=int, default=None, help="chunks the reranker re-scores (default 30)")
    ap.add_argument("--reranker-path", default="", help="local folder of a reranker model")
    ap.add_argument("--entities", default=None, metavar="MODULE:CALLABLE",
                    help="entity extractor factory for graph configurations, e.g. ingestion.entities:EntityExtractor "
                    "(graph configurations are skipped without one)")
    ap.add_argument("--split", action="store_true",
                    help="split each document as ingestion splits an upload (KBQA_INGESTION__CHUNK_* settings); a "
                    "document ranks where its best chunk does")
    ap.add_argument("--sentence-weight", type=float, default=0.0,
                    help="score each chunk of the dense list with its best sentence too: cosine + W x best sentence "
                    "cosine (sentences embedded once and cached; 0: off)")
    ap.add_argument("--weaviate-url", default="",
                    help="run BM25 on this Weaviate server (a temp collection, dropped afterwards) instead of tantivy")
    ap.add_argument("--weaviate-grpc-port", type=int, default=50051)
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    update: dict[str, object] = {}
    if args.weights:
        wk, wv, wg = (float(x) for x in args.weights.split(","))
        update.update(weight_keyword=wk, weight_vector=wv, weight_graph=wg)
    if args.rrf_k:
        update["rrf_k"] = args.rrf_k
    if args.fusion:
        update["fusion"] = args.fusion
    if args.multi_hop:
        update["multi_hop"] = True
    if args.title_links:
        update["title_links"] = args.title_links == "on"
    if args.entities and extract_entities is None:
        module, _, attr = args.entities.partition(":")
        extract_entities = getattr(importlib.import_module(module), attr)()
    if args.reranker:
        update.update(reranker=args.reranker, reranker_model_path=args.reranker_path)
    if args.rerank_candidates:
        update["rerank_candidates"] = args.rerank_candidates
    settings = RetrievalSettings().model_copy(update=update)
    embedder = default_embedder()
    table = run_retrieval_eval(args.dataset, [c for c in args.configs.split(",") if c], settings=settings,
                               embedder=embedder, extract_entities=extract_entities,
                               reranker=build_reranker(settings, embedder),
                               cache_dir=args.cache_dir, max_queries=args.max_queries, stride=args.stride,
                               weaviate=(args.weaviate_url, args.weaviate_grpc_port) if args.weaviate_url else None,
                               split=Settings().ingestion if args.split else None,
                               sentence_weight=args.sentence_weight)
    print(table.format())


if __name__ == "__main__":
    main()
