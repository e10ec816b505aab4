"""Null objects for disabled retrievers: they satisfy the index protocols, hold nothing and return ``[]``.

A deployment that turns the graph (or vector, or keyword) index off passes one of these to
:class:`retrieval.hybrid.HybridRetriever` instead of branching on a flag. The hybrid retriever does not count a null
index as a working retriever when deciding whether *every* retriever failed.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.types import ChunkRecord, Hit, SearchFilter


class NullIndex:
    """Base of the disabled indexes (``isinstance(x, NullIndex)`` marks a retriever as disabled)."""

    name = "disabled"

    def delete_document(self, document_id: str) -> None:
        return None

    def count(self, tenant_id: str | None = None) -> int:
        return 0

    def close(self) -> None:
        return None


class NullKeywordIndex(NullIndex):
    name = "keyword-disabled"

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        return None

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        return []


class NullVectorIndex(NullIndex):
    name = "vector-disabled"

    def __init__(self, dim: int = 0) -> None:
        self.dim = dim

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        return None

    def search(self, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        return []


class NullGraphIndex(NullIndex):
    name = "graph-disabled"

    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        return None

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        return []


def is_disabled(index: object) -> bool:
    return isinstance(index, NullIndex)
