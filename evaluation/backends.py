"""Builders of the temp embedded indexes used by :mod:`evaluation.retrieval` and the retrieval benchmark.

Chunks are loaded one document at a time (a document's chunks must be consecutive), the way ingestion writes them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import groupby
from pathlib import Path

import numpy as np

from core.types import ChunkRecord
from retrieval.graph import NetworkXGraphIndex, QueryExtractor
from retrieval.keyword import TantivyKeywordIndex
from retrieval.protocols import Embedder, KeywordIndex, VectorIndex
from retrieval.vector import EmbeddedVectorIndex


def default_embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 embedder (CPU)."""
    from core.settings import EmbeddingSettings
    from retrieval.embedders import build_embedder

    return build_embedder(EmbeddingSettings())


def by_document(chunks: Sequence[ChunkRecord]) -> Iterator[tuple[str, int, int]]:
    """``(document_id, start, stop)`` for each run of consecutive chunks of one document."""
    start = 0
    for doc_id, group in groupby(chunks, key=lambda c: c.document_id):
        n = sum(1 for _ in group)
        yield doc_id, start, start + n
        start += n


def build_keyword(folder: Path, chunks: Sequence[ChunkRecord]) -> TantivyKeywordIndex:
    idx = TantivyKeywordIndex(folder)
    idx.upsert_many([(doc, list(chunks[a:b])) for doc, a, b in by_document(chunks)])
    return idx


def build_weaviate_keyword(url: str, grpc_port: int, chunks: Sequence[ChunkRecord], dim: int) -> KeywordIndex:
    """A throw-away Weaviate collection holding ``chunks`` for BM25 (no vectors); ``drop()`` it when done."""
    import uuid

    from retrieval.weaviate_backend import WeaviateIndex

    idx = WeaviateIndex(url, dim=dim, grpc_port=grpc_port, collection="KbqaEval" + uuid.uuid4().hex[:12])
    idx.upsert_many([(c, None) for c in chunks])
    return idx


def build_vector(folder: Path, chunks: Sequence[ChunkRecord], vectors: np.ndarray, dim: int) -> VectorIndex:
    idx = EmbeddedVectorIndex(folder, dim, wal_max_bytes=1 << 40)
    for doc, a, b in by_document(chunks):
        idx.upsert_document(doc, chunks[a:b], vectors[a:b])
    return idx


def build_graph(
    folder: Path,
    chunks: Sequence[ChunkRecord],
    entities: Sequence[Sequence[str]],
    *,
    query_extractor: QueryExtractor | None = None,
    timeout_s: float = 30.0,
) -> NetworkXGraphIndex:
    # bulk load: one snapshot at the end instead of one every few hundred documents
    idx = NetworkXGraphIndex(folder, query_extractor=query_extractor, timeout_s=timeout_s, compact_every=10**9)
    for doc, a, b in by_document(chunks):
        idx.upsert_document(doc, chunks[a:b], [list(e) for e in entities[a:b]])
    idx.flush()
    return idx
