"""The index factory picks the backend from settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import AppError, ErrorCode
from core.settings import IndexSettings, Settings
from retrieval.factory import build_keyword_index, build_text_indexes, build_vector_index
from retrieval.keyword import TantivyKeywordIndex
from retrieval.protocols import KeywordIndex, VectorIndex
from retrieval.vector import EmbeddedVectorIndex

pytestmark = pytest.mark.unit


def test_embedded_backends_live_under_root(tmp_path: Path) -> None:
    kw = build_keyword_index(Settings(), tmp_path)
    vec = build_vector_index(Settings(), tmp_path, 8)
    assert isinstance(kw, TantivyKeywordIndex) and isinstance(kw, KeywordIndex)
    assert isinstance(vec, EmbeddedVectorIndex) and isinstance(vec, VectorIndex) and vec.dim == 8
    assert (tmp_path / "bm25").is_dir() and (tmp_path / "dense").is_dir()
    kw.close()
    vec.close()


def test_unreachable_weaviate_starts_and_each_call_is_index_unavailable(tmp_path: Path) -> None:
    """The service must start while Weaviate is down (it degrades); every call says why, at once."""
    pytest.importorskip("weaviate", reason="weaviate-client is not installed")
    index = IndexSettings(backend="weaviate", weaviate_url="http://127.0.0.1:9", weaviate_grpc_port=10)
    settings = Settings(index=index)
    keyword, vector = build_text_indexes(settings, tmp_path, 8)
    assert keyword is vector
    with pytest.raises(AppError) as err:
        keyword.count(None)
    assert err.value.code is ErrorCode.INDEX_UNAVAILABLE and "cannot reach Weaviate" in err.value.message


def test_invalid_weaviate_settings_are_a_configuration_error(tmp_path: Path) -> None:
    pytest.importorskip("weaviate", reason="weaviate-client is not installed")
    index = IndexSettings(backend="weaviate", weaviate_url="http://127.0.0.1:9", weaviate_grpc_port=9)
    with pytest.raises(AppError) as err:
        build_vector_index(Settings(index=index), tmp_path, 8)
    assert err.value.code is ErrorCode.CONFIGURATION


def test_hnsw_search_breadth_comes_from_settings_also_for_a_reopened_index(tmp_path: Path) -> None:
    import numpy as np

    from core.types import ChunkRecord

    def settings(ef: int) -> Settings:
        return Settings(index=IndexSettings(hnsw_expansion_search=ef))

    vec = build_vector_index(settings(100), tmp_path, 8)
    chunks = [
        ChunkRecord(id=f"c{i}", tenant_id="t", document_id="d", document_version=1, title="T", text="x")
        for i in range(20)
    ]
    vec.upsert_document("d", chunks, np.random.default_rng(0).standard_normal((20, 8)).astype(np.float32))
    assert [g.expansion_search for g in vec._ann.graphs.values()] == [100]  # type: ignore[attr-defined]
    vec.close()
    again = build_vector_index(settings(300), tmp_path, 8)
    assert [g.expansion_search for g in again._ann.graphs.values()] == [300]  # type: ignore[attr-defined]
    again.close()


def test_graph_backend_comes_from_settings(tmp_path: Path) -> None:
    import sqlalchemy as sa

    from core.settings import DatabaseSettings
    from retrieval.factory import build_graph_index
    from retrieval.graph import NetworkXGraphIndex
    from retrieval.graph.sql import PostgresGraphIndex
    from retrieval.null import is_disabled
    from retrieval.protocols import GraphIndex, TransactionalGraphIndex

    assert is_disabled(build_graph_index(Settings(), tmp_path)) and not (tmp_path / "graph").exists()  # default
    embedded = build_graph_index(Settings(index=IndexSettings(graph_backend="embedded")), tmp_path)
    assert isinstance(embedded, NetworkXGraphIndex) and (tmp_path / "graph").is_dir()
    assert not isinstance(embedded, TransactionalGraphIndex)
    with pytest.raises(ValueError, match="PostgreSQL URL"):
        Settings(index=IndexSettings(graph_backend="postgres"))
    settings = Settings(
        index=IndexSettings(graph_backend="postgres"), database=DatabaseSettings(url="postgresql+psycopg://u@h/db")
    )
    engine = sa.create_engine(settings.database.url)  # no connection is made until the first query
    graph = build_graph_index(settings, tmp_path, engine=engine)
    assert isinstance(graph, PostgresGraphIndex) and isinstance(graph, GraphIndex)
    assert isinstance(graph, TransactionalGraphIndex)
    with pytest.raises(ValueError, match="engine"):
        build_graph_index(settings, tmp_path)
