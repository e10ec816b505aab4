"""Reranker backends (:class:`retrieval.protocols.Reranker`) and the settings-keyed factory.

- :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` loaded from a local folder
  (e.g. a mounted ``bge-reranker-v2-m3`` or ``ms-marco-MiniLM-L-6-v2``).
- :class:`FlagReranker`: FlagEmbedding's ``FlagReranker`` from a local folder (the BGE reranker family).

Both need a model folder (``retrieval.reranker_model_path``); no reranker weights ship with kbqa, and nothing is
downloaded at run time: a path that is not a local folder is refused with ``CONFIGURATION``.
``retrieval.reranker = "none"`` (the default) keeps the fused order: on the dev sets no weight-free signal available
offline improved on fusion (see ``evaluation/retrieval.py`` and the retrieval evaluation notes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.errors import AppError, ErrorCode, missing_extra
from core.settings import RetrievalSettings
from retrieval.protocols import Reranker

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


def build_reranker(settings: RetrievalSettings) -> Reranker | None:
    """The reranker the settings ask for, or ``None`` for fused order (``reranker = "none"``)."""
    if settings.reranker == "none":
        return None
    if not settings.reranker_model_path:
        raise AppError(
            ErrorCode.CONFIGURATION,
            f"retrieval.reranker={settings.reranker!r} needs retrieval.reranker_model_path (a local model folder)",
        )
    if settings.reranker == "cross-encoder":
        return CrossEncoderReranker(settings.reranker_model_path)
    return FlagReranker(settings.reranker_model_path)
