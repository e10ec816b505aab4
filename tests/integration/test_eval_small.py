"""End-to-end retrieval evaluation on a tiny BEIR-format dataset written here (real MiniLM embedder, real indexes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluation.retrieval import CONFIGS, run_retrieval_eval

pytestmark = pytest.mark.integration

DOCS = {
    "d1": ("Photosynthesis", "Plants convert sunlight, water and carbon dioxide into glucose and oxygen."),
    "d2": ("Volcano", "Mount Etna in Sicily is one of the most active volcanoes in Europe."),
    "d3": ("Transistor", "The transistor was invented at Bell Labs in 1947 by Bardeen, Brattain and Shockley."),
    "d4": ("Marathon", "The marathon race commemorates the run of Pheidippides from Marathon to Athens."),
    "d5": ("Insulin", "Insulin is a hormone made by the pancreas that lowers blood glucose levels."),
    "d6": ("Tides", "Ocean tides are caused mainly by the gravitational pull of the Moon."),
}
QUERIES = {
    "q1": ("Which Sicilian mountain is an active volcano?", {"d2": 1}),
    "q2": ("Who invented the transistor at Bell Labs?", {"d3": 1}),
    "q3": ("What hormone from the pancreas regulates blood sugar?", {"d5": 1}),
    "q4": ("Why does the sea level rise and fall each day?", {"d6": 1}),
}


def write_dataset(folder: Path) -> Path:
    folder.mkdir()
    with (folder / "corpus.jsonl").open("w") as f:
        for doc_id, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
    with (folder / "queries.jsonl").open("w") as f:
        for qid, (text, _) in QUERIES.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    lines = ["query-id\tcorpus-id\tscore"]
    lines += [f"{q}\t{d}\t{s}" for q, (_, rel) in QUERIES.items() for d, s in rel.items()]
    (folder / "qrels.tsv").write_text("\n".join(lines) + "\n")
    return folder


def test_eval_runs_end_to_end_and_caches_embeddings(tmp_path: Path) -> None:
    from ingestion.entities import EntityExtractor

    data = write_dataset(tmp_path / "tiny")
    cache = tmp_path / "cache"
    extractor = EntityExtractor()
    configs = ["bm25", "dense", "graph", "hybrid", "hybrid+rerank", "hybrid+graph", "hybrid+graph+rerank"]
    table = run_retrieval_eval(data, configs, cache_dir=cache, extract_entities=extractor)
    rows = {r.config: r for r in table.rows}
    assert list(rows) == configs
    assert table.n_queries == 4 and table.n_docs == 6
    # every query has lexical and semantic overlap with its document: the retrievers must find them
    assert rows["dense"].metrics["recall@10"] == 1.0
    assert rows["hybrid"].metrics["recall@10"] == 1.0
    assert rows["hybrid"].metrics["ndcg@10"] >= 0.8
    assert rows["bm25"].metrics["mrr@10"] >= 0.75
    assert 0.0 <= rows["graph"].metrics["ndcg@10"] <= 1.0
    assert rows["hybrid"].latency_ms["total"][1] >= rows["hybrid"].latency_ms["total"][0] > 0
    assert "skipped" in rows["hybrid+graph+rerank"].note  # no reranker configured here
    assert "skipped" in rows["hybrid+rerank"].note
    assert rows["hybrid"].degraded == 0
    text = table.format()
    for c in CONFIGS:
        assert c in text
    cached = sorted(cache.glob("*.npy"))
    assert len(cached) == 1  # corpus embeddings
    mtime = cached[0].stat().st_mtime_ns
    again = run_retrieval_eval(data, ["dense"], cache_dir=cache)
    assert again.rows[0].metrics == rows["dense"].metrics
    assert cached[0].stat().st_mtime_ns == mtime  # reused, not recomputed


def test_eval_sentence_rerank_row_and_query_stride(tmp_path: Path) -> None:
    from evaluation.backends import default_embedder
    from retrieval.rerank import SentenceReranker

    data = write_dataset(tmp_path / "tiny")
    embedder = default_embedder()
    table = run_retrieval_eval(data, ["hybrid", "hybrid+rerank"], embedder=embedder, cache_dir=None,
                               reranker=SentenceReranker(embedder), stride=2)
    assert table.n_queries == 2  # q1, q3
    rows = {r.config: r for r in table.rows}
    assert rows["hybrid+rerank"].metrics["recall@10"] == rows["hybrid"].metrics["recall@10"] == 1.0
    assert rows["hybrid+rerank"].metrics["ndcg@10"] >= 0.8
    assert "rerank" in rows["hybrid+rerank"].latency_ms and "rerank" not in rows["hybrid"].latency_ms


def test_eval_bm25_on_weaviate_matches_tantivy_and_drops_its_collection(tmp_path: Path, weaviate_server) -> None:  # noqa: ANN001
    import weaviate

    from evaluation.backends import default_embedder

    data = write_dataset(tmp_path / "tiny")
    server = (weaviate_server.url, weaviate_server.grpc_port)
    embedder = default_embedder()
    embedded = run_retrieval_eval(data, ["bm25"], embedder=embedder, cache_dir=None)
    remote = run_retrieval_eval(data, ["bm25"], embedder=embedder, cache_dir=None, weaviate=server)
    assert [r.config for r in remote.rows] == ["bm25@weaviate"]
    assert remote.rows[0].metrics == pytest.approx(embedded.rows[0].metrics)
    assert remote.rows[0].metrics["mrr@10"] >= 0.75
    host, port = weaviate_server.url.rsplit(":", 1)
    with weaviate.connect_to_local(host=host.split("//")[1], port=int(port), grpc_port=server[1]) as client:
        assert not [n for n in client.collections.list_all() if n.lower().startswith("kbqaeval")]


def test_eval_on_documents_split_as_ingestion_splits_them_scores_documents(tmp_path: Path) -> None:
    from core.settings import IngestionSettings

    data = write_dataset(tmp_path / "tiny")
    split = IngestionSettings(chunk_target_tokens=16, chunk_overlap_tokens=4)
    table = run_retrieval_eval(data, ["bm25", "hybrid"], cache_dir=tmp_path / "cache", split=split)
    assert table.n_docs > len(DOCS)  # chunks: each document's title heads each of its chunks
    rows = {r.config: r for r in table.rows}
    # runs are of documents (the qrels' ids), each at its best chunk's rank
    assert rows["hybrid"].metrics["recall@10"] == 1.0
    assert rows["bm25"].metrics["mrr@10"] >= 0.75
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 1
