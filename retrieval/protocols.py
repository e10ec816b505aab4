"""Protocols for every index kind, the embedder, the reranker and the hybrid retriever.

A new backend is written from these docstrings alone; ``tests/contract/`` holds one test suite each backend must pass.

Common rules for every index:

- **Tenancy and filters are pushed down.** Every read takes a :class:`~core.types.SearchFilter` and applies it
  inside the index (or in a pre-filter over candidate ids the index owns), never by asking the caller to drop rows.
  ``SearchFilter.admits`` is the reference semantics. A result that the filter does not admit is a defect.
- **Writes are per document and idempotent.** ``upsert_document(document_id, chunks)`` replaces *all* chunks of that
  document (any version) with the given ones, atomically for readers: a reader sees the old set or the new set, never
  a mix. Upserting the same chunks twice leaves one copy. ``delete_document`` removes every chunk of the document and
  is a no-op for an unknown id.
- **Concurrency.** One writer at a time per index (callers serialise writes per tenant); any number of concurrent
  readers while a write runs.
- **Errors.** Backends raise :class:`core.errors.AppError` with ``ErrorCode.INDEX_UNAVAILABLE`` when the engine
  cannot be reached or opened; a query with no match returns an empty list, never an error.
- **Scores** are "higher is better" and comparable only within one result list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
from sqlalchemy.orm import Session

from core.types import ChunkRecord, Hit, RankedChunk, SearchFilter


@runtime_checkable
class KeywordIndex(Protocol):
    """Lexical (BM25) index over chunk text, title and section path."""

    name: str

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord]) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        """Top ``k`` chunks by BM25 for the free-text ``query`` (terms are OR-ed; no query syntax errors are raised:
        user text is escaped)."""
        ...

    def count(self, tenant_id: str | None = None) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class VectorIndex(Protocol):
    """Dense index of L2-normalised embeddings; score is cosine similarity."""

    name: str
    dim: int

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        """``vectors[i]`` is the embedding of ``chunks[i]`` (float32, shape ``(len(chunks), dim)``)."""
        ...

    def delete_document(self, document_id: str) -> None: ...

    def search(self, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]: ...

    def count(self, tenant_id: str | None = None) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class GraphIndex(Protocol):
    """Knowledge graph: entity nodes, chunk nodes, document and section nodes.

    Edges: chunk -mentions-> entity; entity -co-occurs(weight)- entity; document > section > chunk structure.
    ``entities[i]`` lists the normalised entity names mentioned by ``chunks[i]``.
    """

    name: str

    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None: ...

    def delete_document(self, document_id: str) -> None: ...

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        """Link the query to entities, then rank chunks (e.g. personalised PageRank seeded on those entities)."""
        ...

    def count(self, tenant_id: str | None = None) -> int: ...

    def close(self) -> None: ...


@runtime_checkable
class TransactionalGraphIndex(GraphIndex, Protocol):
    """A graph index kept in the application database: its writes can join the caller's transaction, so a
    document's graph is committed together with its chunk rows (or not at all)."""

    def upsert_document_in(
        self, session: Session, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None: ...

    def delete_document_in(self, session: Session, document_id: str) -> None: ...


@runtime_checkable
class ChunkStore(Protocol):
    """Looks chunk records up by id (the indexes return ids; the store returns the records)."""

    def get_many(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]: ...


@runtime_checkable
class Embedder(Protocol):
    """Text to L2-normalised float32 vectors."""

    model_name: str
    model_version: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the model's own tokenizer (used by the chunker)."""
        ...


@runtime_checkable
class Reranker(Protocol):
    """Re-scores (query, passage) pairs; returns one score per passage, higher is better."""

    name: str

    def score(self, query: str, passages: Sequence[str]) -> list[float]: ...


@dataclass(slots=True)
class RetrievalResult:
    """What the hybrid retriever returns: fused (and reranked) chunks, plus what degraded and how long each stage took.

    ``degraded`` lists stage names that failed or timed out and were skipped (e.g. ``"vector"``, ``"graph"``,
    ``"rerank"``); the result is still usable. ``timings_ms`` has milliseconds per configured retriever (``keyword``,
    ``vector``, ``graph``; for a skipped one, the time until it was given up), then ``fuse``, ``rerank`` (when a
    reranker is set) and ``total``.
    """

    chunks: list[RankedChunk]
    degraded: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class Retriever(Protocol):
    async def retrieve(self, query: str, flt: SearchFilter, top_k: int) -> RetrievalResult: ...
