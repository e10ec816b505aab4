"""Sentence-level late interaction on the dense list, from sentence vectors computed once (no query-time embedding
beyond the query's own).

A chunk's embedding averages everything the chunk says, and the bundled embedder reads at most 256 word pieces of
it: a question that matches one sentence of a long chunk ("how do I stop paying for it?" and "You can cancel at any
time under Account, Subscriptions") scores low against the whole. :class:`SentenceVectorIndex` wraps a
:class:`retrieval.protocols.VectorIndex`: it takes the inner index's best ``candidates`` chunks and scores each as

    cosine(query, chunk) + ``weight`` x max over the chunk's sentences of cosine(query, sentence)

with the sentence vectors given to it (``sentence_vectors``: chunk id -> one L2-normalised row per sentence of
:func:`chunk_sentences`). A chunk without sentence vectors counts its chunk cosine as its best sentence; since a
chunk's best sentence usually scores above the chunk itself, such a chunk tends to rank below chunks that have them
(re-ingest the documents after turning sentence vectors on).

Unlike :class:`retrieval.rerank.SentenceReranker`, which embeds the candidates' sentences for every query (~2 s of CPU
per query on 2 cores, off by default for that reason), the sentences here are embedded once, at indexing time; a
query costs ``candidates`` small matrix products. Measured offline on the evaluation sets (``python -m
evaluation.retrieval --sentence-weight W``): see ``evaluation/RESULTS.md``, "Sentence vectors on the dense list".

In the product the same scoring (:func:`rescore`) runs inside :class:`retrieval.hybrid.HybridRetriever` on the vector
list, with the sentence vectors ingestion stores beside each chunk (:func:`pack`; ``chunks.sentence_vectors``), when
``ingestion.sentence_vectors`` and ``retrieval.sentence_weight`` are set (both off by default).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.protocols import VectorIndex
from retrieval.rerank import split_sentences

#: Sentences shorter than this many words are left out (list markers, "Yes.", table separators).
MIN_WORDS = 3
#: A long sentence is cut into pieces of at most this many words (as the sentence reranker cuts them).
MAX_WORDS = 48


def chunk_sentences(text: str, *, max_words: int = MAX_WORDS, min_words: int = MIN_WORDS) -> list[str]:
    """The sentences of a chunk's text to embed one by one: pieces of at most ``max_words`` words with at least
    ``min_words`` words; the text's first ``max_words`` words when no sentence is that long (never empty for a text
    with words)."""
    sentences = [s for s in split_sentences(text, max_words=max_words) if len(s.split()) >= min_words]
    if sentences:
        return sentences
    head = " ".join(text.split()[:max_words])
    return [head] if head else []


def per_chunk_rows(rows: np.ndarray, per_chunk: Sequence[Sequence[str]]) -> list[np.ndarray]:
    """``rows``, the embeddings of the sentences of ``per_chunk`` flattened in order, cut back into one block per
    chunk (an empty block for a chunk without sentences)."""
    ends = np.cumsum([len(sentences) for sentences in per_chunk], dtype=np.int64)
    if len(ends) and ends[-1] != len(rows):
        raise ValueError(f"{len(rows)} rows for {int(ends[-1])} sentences")
    return [rows[end - len(sentences) : end] for sentences, end in zip(per_chunk, ends, strict=True)]


def pack(vectors: np.ndarray) -> bytes:
    """A chunk's sentence embeddings as stored: float16, row after row."""
    return np.asarray(vectors, dtype=np.float16).tobytes()


def unpack(blob: bytes, dim: int) -> np.ndarray | None:
    """The rows :func:`pack` stored, as float32 ``(n, dim)``; None when ``blob`` does not hold rows of ``dim`` (an
    embedder of another dimension wrote it)."""
    if not blob or len(blob) % (2 * dim):
        return None
    return np.frombuffer(blob, dtype=np.float16).reshape(-1, dim).astype(np.float32)


@dataclass(frozen=True, slots=True)
class SentenceHit(Hit):
    """A dense hit re-scored with its best sentence: ``score`` = ``cosine`` + weight x ``sentence``."""

    cosine: float = 0.0
    sentence: float = 0.0


def rescore(
    hits: Sequence[Hit], query: np.ndarray, rows_of: Callable[[str], np.ndarray | None], weight: float
) -> list[Hit]:
    """``hits`` (cosines) re-scored as cosine + ``weight`` x the best cosine of the chunk's sentence rows
    (``rows_of(chunk_id)``, L2-normalised; a chunk without rows counts its own cosine), best first."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    q = q / norm if norm else q
    scored: list[Hit] = []
    for hit in hits:
        rows = rows_of(hit.chunk_id)
        best = float(np.max(rows @ q)) if rows is not None and len(rows) else hit.score
        scored.append(SentenceHit(hit.chunk_id, hit.score + weight * best, hit.score, best))
    scored.sort(key=lambda h: -h.score)  # stable: ties keep the inner order
    return scored


class SentenceVectorIndex:
    """A :class:`VectorIndex` whose search re-scores the inner index's top ``candidates`` hits with their best
    sentence (module docstring). Writes, counts and closing go to the inner index."""

    def __init__(
        self, inner: VectorIndex, sentence_vectors: Mapping[str, np.ndarray], *, weight: float = 1.0,
        candidates: int = 300,
    ) -> None:
        if weight < 0 or candidates < 1:
            raise ValueError("weight must be >= 0 and candidates >= 1")
        self.inner = inner
        self.sentence_vectors = sentence_vectors
        self.weight = weight
        self.candidates = candidates
        self.name = f"{inner.name}+sentences"
        self.dim = inner.dim

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        self.inner.upsert_document(document_id, chunks, vectors)

    def delete_document(self, document_id: str) -> None:
        self.inner.delete_document(document_id)

    def count(self, tenant_id: str | None = None) -> int:
        return self.inner.count(tenant_id)

    def close(self) -> None:
        self.inner.close()

    def search(self, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        if k <= 0:
            return []
        hits = self.inner.search(vector, flt, max(k, self.candidates))
        if not self.weight:
            return hits[:k]
        return rescore(hits, vector, self.sentence_vectors.get, self.weight)[:k]
