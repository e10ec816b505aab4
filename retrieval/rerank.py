"""Reranker backends (:class:`retrieval.protocols.Reranker`) and the settings-keyed factory.

- :class:`SentenceReranker`: no extra weights. Sentence-level late interaction with the configured embedder (the
  bundled all-MiniLM-L6-v2 by default): each chunk is split into sentences, at most a few per chunk are embedded, and
  its score is the mean cosine of its best sentences with the query; :class:`retrieval.hybrid.HybridRetriever` blends
  it with the fused score (``fused_weight``).
- :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` loaded from a local folder
  (e.g. a mounted ``bge-reranker-v2-m3`` or ``ms-marco-MiniLM-L-6-v2``).
- :class:`FlagReranker`: FlagEmbedding's ``FlagReranker`` from a local folder (the BGE reranker family).

The last two need a model folder (``retrieval.reranker_model_path``); no reranker weights ship with kbqa, and nothing is
downloaded at run time: a path that is not a local folder is refused with ``CONFIGURATION``.
``retrieval.reranker = "none"`` (the default) keeps the fused order; the sentence reranker's quality and cost on the
evaluation sets are in ``evaluation/RESULTS.md`` (``python -m evaluation.rerank``).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import AppError, ErrorCode, missing_extra
from core.settings import RetrievalSettings
from retrieval.embedders import embed_now
from retrieval.protocols import Embedder, Reranker

log = logging.getLogger(__name__)


def _local_model_dir(model_path: str) -> Path:
    path = Path(model_path).expanduser()
    if not model_path or not path.is_dir():
        raise AppError(
            ErrorCode.CONFIGURATION,
            f"reranker model path {model_path!r} is not a local folder (models are never downloaded at run time)",
            details={"model_path": model_path},
        )
    return path


_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])|\n+")
_WORD = re.compile(r"\w+")
#: Words too common to say which sentence a query is about (used only to pick which sentences to embed).
_STOP = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "had", "has", "have", "how",
    "in", "is", "it", "its", "of", "on", "or", "that", "the", "their", "this", "to", "was", "were", "what", "when",
    "where", "which", "who", "whom", "whose", "why", "with",
))


def split_sentences(passage: str, *, max_words: int) -> list[str]:
    """A passage's sentences (at ., ! or ? before an upper-case letter or digit, and at line breaks); a sentence
    longer than ``max_words`` words becomes consecutive pieces of at most ``max_words`` words."""
    out: list[str] = []
    for part in _SENTENCE_END.split(passage):
        words = part.split()
        out += [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]
    return out


def query_terms(query: str) -> frozenset[str]:
    return frozenset(w for w in _WORD.findall(query.lower()) if w not in _STOP)


def select_sentences(terms: frozenset[str], sentences: Sequence[str], cap: int) -> list[int]:
    """Indices (in passage order) of at most ``cap`` sentences: those sharing the most words with the query,
    earlier sentences first on ties. This bounds the embedding cost of a long chunk."""
    if len(sentences) <= cap:
        return list(range(len(sentences)))
    overlap = [len(terms.intersection(_WORD.findall(s.lower()))) for s in sentences]
    best = sorted(range(len(sentences)), key=lambda i: (-overlap[i], i))[:cap]
    return sorted(best)


def top_mean(similarities: Sequence[float], top: int) -> float:
    """Mean of the ``top`` largest values (all of them when there are fewer); 0.0 for none."""
    if len(similarities) == 0:
        return 0.0
    best = sorted(similarities, reverse=True)[:top]
    return float(sum(best) / len(best))


class SentenceReranker:
    """Scores each passage by its best-matching sentences: the mean cosine of its ``top`` best sentences with the
    query, under ``embedder`` (no reranker weights needed).

    Cost is bounded per request: at most ``max_sentences`` sentences per passage (those sharing the most words with
    the query), each at most ``max_words`` words, identical sentences embedded once, all in one batch with the query.
    Nothing is cached across requests. ``fused_weight`` is read by the hybrid retriever, which ranks by
    z(sentence score) + fused_weight x z(fused score) over the re-scored chunks."""

    def __init__(
        self, embedder: Embedder, *, top: int = 1, max_sentences: int = 4, max_words: int = 48,
        fused_weight: float = 4.0,
    ) -> None:
        self.name = f"sentence:{embedder.model_name}"
        self._embedder = embedder
        self.top = top
        self.max_sentences = max_sentences
        self.max_words = max_words
        self.fused_weight = fused_weight

    def sentences(self, query: str, passage: str) -> list[str]:
        """The sentences of ``passage`` that are embedded for ``query`` (at most ``max_sentences``)."""
        sents = split_sentences(passage, max_words=self.max_words)
        return [sents[i] for i in select_sentences(query_terms(query), sents, self.max_sentences)]

    def _embed(self, texts: list[str]) -> np.ndarray:
        return embed_now(self._embedder, texts)

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        per_passage = [self.sentences(query, p) for p in passages]
        unique = list(dict.fromkeys(s for sents in per_passage for s in sents))
        vectors = self._embed([query, *unique])
        sims = vectors[1:] @ vectors[0]
        row = {s: float(sims[i]) for i, s in enumerate(unique)}
        return [top_mean([row[s] for s in sents], self.top) for sents in per_passage]


class CrossEncoderReranker:
    """sentence-transformers ``CrossEncoder`` over (query, passage) pairs; scores are the model's raw logits."""

    def __init__(self, model_path: str, *, device: str = "cpu", max_length: int = 512, batch_size: int = 16) -> None:
        path = _local_model_dir(model_path)
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # pragma: no cover - sentence-transformers is a core dependency
            raise missing_extra("sentence-transformers", "embeddings") from exc
        self.name = f"cross-encoder:{path.name}"
        self._batch_size = batch_size
        self._model: Any = CrossEncoder(str(path), device=device, max_length=max_length, local_files_only=True)
        self._lock = threading.Lock()  # torch modules are not safe to call from several threads at once

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        pairs = [(query, p) for p in passages]
        with self._lock:
            scores = self._model.predict(pairs, batch_size=self._batch_size, show_progress_bar=False)
        return [float(s) for s in scores]


class FlagReranker:
    """FlagEmbedding's ``FlagReranker`` (e.g. ``bge-reranker-v2-m3``); fp32 by default so it runs on CPU."""

    def __init__(self, model_path: str, *, use_fp16: bool = False, batch_size: int = 16, max_length: int = 512) -> None:
        path = _local_model_dir(model_path)
        try:
            from FlagEmbedding import FlagReranker as _FlagReranker
        except ImportError as exc:
            raise missing_extra("FlagEmbedding", "flag") from exc
        self.name = f"flag:{path.name}"
        self._batch_size = batch_size
        self._max_length = max_length
        self._model: Any = _FlagReranker(str(path), use_fp16=use_fp16)
        self._lock = threading.Lock()

    def score(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        pairs = [[query, p] for p in passages]
        with self._lock:
            scores = self._model.compute_score(pairs, batch_size=self._batch_size, max_length=self._max_length)
        if isinstance(scores, (int, float)):  # FlagEmbedding returns a bare float for a single pair
            scores = [scores]
        return [float(s) for s in scores]


def build_reranker(settings: RetrievalSettings, embedder: Embedder | None = None) -> Reranker | None:
    """The reranker the settings ask for, or ``None`` for fused order (``reranker = "none"``). ``sentence`` needs
    ``embedder`` (the one the vector index uses)."""
    if settings.reranker == "none":
        return None
    if settings.reranker == "sentence":
        if embedder is None:
            raise AppError(ErrorCode.CONFIGURATION, "retrieval.reranker='sentence' needs an embedder")
        return SentenceReranker(
            embedder,
            top=settings.sentence_rerank_top,
            max_sentences=settings.sentence_rerank_max_sentences,
            max_words=settings.sentence_rerank_max_words,
            fused_weight=settings.sentence_rerank_fused_weight,
        )
    if not settings.reranker_model_path:
        raise AppError(
            ErrorCode.CONFIGURATION,
            f"retrieval.reranker={settings.reranker!r} needs retrieval.reranker_model_path (a local model folder)",
        )
    if settings.reranker == "cross-encoder":
        return CrossEncoderReranker(settings.reranker_model_path)
    return FlagReranker(settings.reranker_model_path)
