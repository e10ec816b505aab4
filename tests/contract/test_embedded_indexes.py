"""The index contract run against the embedded backends (tantivy BM25 and the usearch/numpy dense index)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.keyword import TantivyKeywordIndex
from retrieval.protocols import KeywordIndex, VectorIndex
from retrieval.vector import EmbeddedVectorIndex
from tests.contract.index_contract import DIM, IndexContract, vector_for

pytestmark = pytest.mark.unit


class KeywordContract(IndexContract):
    def write(self, index: KeywordIndex, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        index.upsert_document(document_id, chunks)

    def search_all(self, index: KeywordIndex, flt: SearchFilter, k: int = 100) -> list[Hit]:
        return index.search("common", flt, k)

    def search_text(self, index: KeywordIndex, text: str, flt: SearchFilter) -> list[Hit]:
        return index.search(text, flt, 10)


class VectorContract(IndexContract):
    def write(self, index: VectorIndex, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        vectors = np.stack([vector_for(c.id) for c in chunks]) if chunks else np.zeros((0, DIM), np.float32)
        index.upsert_document(document_id, chunks, vectors)

    def search_all(self, index: VectorIndex, flt: SearchFilter, k: int = 100) -> list[Hit]:
        return index.search(vector_for("any query"), flt, k)

    def search_text(self, index: VectorIndex, text: str, flt: SearchFilter) -> list[Hit]:
        return index.search(vector_for(text), flt, 10)


class TestTantivyKeywordIndex(KeywordContract):
    def make_index(self, root: Path) -> TantivyKeywordIndex:
        return TantivyKeywordIndex(root)

    def test_is_a_keyword_index(self, index: TantivyKeywordIndex) -> None:
        assert isinstance(index, KeywordIndex)

    def test_bm25_ranks_title_and_stems(self, index: TantivyKeywordIndex) -> None:
        a = ChunkRecord(
            id="a", tenant_id="t", document_id="a", document_version=1, title="Running shoes", text="We sell footwear."
        )
        b = ChunkRecord(
            id="b", tenant_id="t", document_id="b", document_version=1, title="Pricing", text="Prices of our products."
        )
        index.upsert_document("a", [a])
        index.upsert_document("b", [b])
        hits = index.search("run", SearchFilter("t"), 5)
        assert [h.chunk_id for h in hits] == ["a"]
        assert hits[0].score > 0


class TestEmbeddedVectorIndexExact(VectorContract):
    """Small admitted sets: exact scoring over the admitted rows."""

    def make_index(self, root: Path) -> EmbeddedVectorIndex:
        return EmbeddedVectorIndex(root, DIM)

    def test_is_a_vector_index(self, index: EmbeddedVectorIndex) -> None:
        assert isinstance(index, VectorIndex)

    def test_nearest_is_itself_with_cosine_score(self, index: EmbeddedVectorIndex) -> None:
        chunks = [
            ChunkRecord(id=f"c{i}", tenant_id="t", document_id="d", document_version=1, title="", text="")
            for i in range(20)
        ]
        self.write(index, "d", chunks)
        hits = index.search(vector_for("c7") * 3.0, SearchFilter("t"), 3)
        assert hits[0].chunk_id == "c7"
        assert hits[0].score == pytest.approx(1.0, abs=1e-2)
        assert hits[0].score >= hits[1].score >= hits[2].score

    def test_wrong_dimension_is_a_validation_error(self, index: EmbeddedVectorIndex) -> None:
        from core.errors import AppError, ErrorCode

        with pytest.raises(AppError) as err:
            index.search(np.zeros(DIM + 1, np.float32), SearchFilter("t"), 3)
        assert err.value.code is ErrorCode.VALIDATION


class TestEmbeddedVectorIndexAnn(VectorContract):
    """``exact_max_rows=0`` forces every search through the HNSW graph + filter mask path."""

    def make_index(self, root: Path) -> EmbeddedVectorIndex:
        return EmbeddedVectorIndex(root, DIM, exact_max_rows=0)


def test_bulk_loads_match_single_upserts(tmp_path: Path) -> None:
    from tests.contract.index_contract import chunk

    docs = {f"d{i}": [chunk("t1", f"d{i}", j) for j in range(3)] for i in range(5)}
    vec = EmbeddedVectorIndex(tmp_path / "dense", DIM, exact_max_rows=0)
    vec.upsert_document("d0", [chunk("t1", "d0", 9, version=0)], vector_for("old")[None, :])
    vec.upsert_many([(d, cs, np.stack([vector_for(c.id) for c in cs])) for d, cs in docs.items()])
    kw = TantivyKeywordIndex(tmp_path / "bm25")
    kw.upsert_many(list(docs.items()))
    expected = {c.id for cs in docs.values() for c in cs}
    assert {h.chunk_id for h in kw.search("common", SearchFilter("t1"), 50)} == expected
    assert {h.chunk_id for h in vec.search(vector_for("q"), SearchFilter("t1"), 50)} == expected
    vec.close()
    again = EmbeddedVectorIndex(tmp_path / "dense", DIM)
    assert again.count("t1") == 15
    again.close()
    kw.close()


def test_second_instance_sees_writes_of_the_first(tmp_path: Path) -> None:
    from tests.contract.index_contract import chunk

    c = chunk("t1", "d1", 0)
    writer = EmbeddedVectorIndex(tmp_path / "dense", DIM)
    reader = EmbeddedVectorIndex(tmp_path / "dense", DIM, refresh_interval_s=0.0)
    writer.upsert_document("d1", [c], vector_for(c.id)[None, :])
    assert [h.chunk_id for h in reader.search(vector_for(c.id), SearchFilter("t1"), 5)] == [c.id]
    writer.close()  # checkpoint: new generation, WAL removed
    writer = EmbeddedVectorIndex(tmp_path / "dense", DIM)
    writer.delete_document("d1")
    assert reader.search(vector_for(c.id), SearchFilter("t1"), 5) == []
    writer.close()
    reader.close()
    kw_writer, kw_reader = TantivyKeywordIndex(tmp_path / "bm25"), TantivyKeywordIndex(tmp_path / "bm25")
    kw_writer.upsert_document("d1", [c])
    kw_reader.refresh()
    assert [h.chunk_id for h in kw_reader.search("common", SearchFilter("t1"), 5)] == [c.id]
    kw_writer.close()
    kw_reader.close()


def test_bm25_scores_of_one_tenant_do_not_move_when_another_tenant_writes(tmp_path: Path) -> None:
    """Per-tenant statistics: another tenant's uploads and deletes (which change document frequencies, document count
    and average length of shared words) leave this tenant's hits and scores exactly as they were."""
    from tests.contract.index_contract import chunk

    kw = TantivyKeywordIndex(tmp_path / "bm25")
    mine = [chunk("a", "a1", 0, text="merger agreement signed in Oslo"),
            chunk("a", "a2", 0, text="quarterly revenue report for the Oslo office"),
            chunk("a", "a3", 0, text="holiday schedule")]
    for c in mine:
        kw.upsert_document(c.document_id, [c])
    query = "Oslo merger revenue"
    before = kw.search(query, SearchFilter("a"), 10)
    assert [h.chunk_id for h in before][:2] == [mine[0].id, mine[1].id]
    # another tenant floods the shared words 'merger' and 'oslo' (and adds unrelated text), then deletes part of it
    theirs = [chunk("b", f"b{i}", 0, text="merger merger Oslo " + "filler " * i) for i in range(30)]
    kw.upsert_many([(c.document_id, [c]) for c in theirs])
    assert kw.search("merger", SearchFilter("b"), 50) and kw.count("b") == 30
    assert kw.search(query, SearchFilter("a"), 10) == before
    for c in theirs[:20]:
        kw.delete_document(c.document_id)
    assert kw.count("b") == 10
    assert kw.search(query, SearchFilter("a"), 10) == before
    # a reader in another process (a second instance) sees the same scores
    other = TantivyKeywordIndex(tmp_path / "bm25")
    assert other.search(query, SearchFilter("a"), 10) == before
    assert other.count() == 13
    other.close()
    kw.close()
