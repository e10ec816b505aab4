"""Settings-keyed construction of the keyword and vector indexes (embedded on disk, or Weaviate).

Embedded layout under ``root`` (normally ``Settings.index_dir``): ``root/bm25/`` (tantivy) and ``root/dense/``
(see :mod:`retrieval.vector.embedded`). Weaviate needs the ``weaviate`` extra; one :class:`WeaviateIndex` can serve
both roles (use :func:`build_text_indexes` to share one connection; :func:`retrieval.indexes.build_indexes` adds
the graph).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.settings import Settings
from retrieval.protocols import KeywordIndex, VectorIndex


def _weaviate(settings: Settings, dim: int) -> Any:
    """A Weaviate index that connects lazily and keeps retrying: a server that is down at start-up degrades the
    service (the other retrievers answer) instead of stopping it."""
    from retrieval.reconnecting import ReconnectingIndex
    from retrieval.weaviate_backend import WeaviateIndex

    ix = settings.index

    def connect() -> WeaviateIndex:
        return WeaviateIndex(ix.weaviate_url, dim=dim, grpc_port=ix.weaviate_grpc_port, api_key=ix.weaviate_api_key)

    return ReconnectingIndex(connect, name="weaviate", dim=dim)


def build_keyword_index(settings: Settings, root: Path, dim: int = 384) -> KeywordIndex:
    """BM25 index: tantivy under ``root/bm25`` or the Weaviate collection (``dim`` is only used by Weaviate)."""
    if settings.index.backend == "weaviate":
        return _weaviate(settings, dim)
    from retrieval.keyword import TantivyKeywordIndex

    return TantivyKeywordIndex(Path(root) / "bm25")


def build_vector_index(settings: Settings, root: Path, dim: int) -> VectorIndex:
    """Dense index: embedded under ``root/dense`` or the Weaviate collection."""
    if settings.index.backend == "weaviate":
        return _weaviate(settings, dim)
    from retrieval.vector import EmbeddedVectorIndex

    return EmbeddedVectorIndex(Path(root) / "dense", dim, expansion_search=settings.index.hnsw_expansion_search)


def build_text_indexes(settings: Settings, root: Path, dim: int) -> tuple[KeywordIndex, VectorIndex]:
    """Both indexes; with Weaviate they are the same object (one connection, one collection)."""
    if settings.index.backend == "weaviate":
        both = _weaviate(settings, dim)
        return both, both
    return build_keyword_index(settings, root, dim), build_vector_index(settings, root, dim)
