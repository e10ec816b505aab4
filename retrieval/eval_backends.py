"""Builders of the temp embedded indexes used by :mod:`retrieval.evaluation` and the retrieval benchmark."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from app.core.types import ChunkRecord
from retrieval.graph import NetworkXGraphIndex, QueryExtractor
from retrieval.keyword import TantivyKeywordIndex
from retrieval.protocols import Embedder, VectorIndex
from retrieval.vector import EmbeddedVectorIndex


def default_embedder() -> Embedder:
    """The bundled all-MiniLM-L6-v2 embedder (CPU)."""
    from app.core.settings import EmbeddingSettings
    from retrieval.embedders import build_embedder

    return build_embedder(EmbeddingSettings())


def build_keyword(folder: Path, chunks: Sequence[ChunkRecord]) -> TantivyKeywordIndex:
    idx = TantivyKeywordIndex(folder)
    idx.upsert_many([(c.document_id, [c]) for c in chunks])
    return idx


def build_vector(folder: Path, chunks: Sequence[ChunkRecord], vectors: np.ndarray, dim: int) -> VectorIndex:
    idx = EmbeddedVectorIndex(folder, dim, wal_max_bytes=1 << 40)
    for i, c in enumerate(chunks):
        idx.upsert_document(c.document_id, [c], vectors[i : i + 1])
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
    for c, ents in zip(chunks, entities, strict=True):
        idx.upsert_document(c.document_id, [c], [list(ents)])
    idx.flush()
    return idx
