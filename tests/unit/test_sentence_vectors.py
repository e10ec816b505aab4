"""Sentence-level late interaction on the dense list (retrieval.sentences) over a real embedded vector index."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from core.settings import RetrievalSettings
from core.types import ChunkRecord, SearchFilter
from evaluation.backends import build_vector
from retrieval.hybrid import HybridRetriever
from retrieval.null import NullGraphIndex, NullKeywordIndex
from retrieval.protocols import VectorIndex
from retrieval.sentences import SentenceVectorIndex, chunk_sentences, pack, per_chunk_rows, unpack
from tests.fakes import FakeEmbedder, FakeSentenceChunkStore

T = "t"


def _unit(*xs: float) -> np.ndarray:
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


Q = _unit(1, 0, 0, 0)


def _with_cosine(c: float, side: int = 1) -> np.ndarray:
    """A unit vector whose cosine with ``Q`` is ``c`` (the rest of its length along axis ``side``)."""
    v = np.zeros(4, dtype=np.float32)
    v[0], v[side] = c, np.sqrt(1 - c * c)
    return v


def _index(tmp_path: Path, cosines: dict[str, float]) -> VectorIndex:
    chunks = [ChunkRecord(id=i, tenant_id=T, document_id=i, document_version=1, title=i, text=i) for i in cosines]
    vectors = np.stack([_with_cosine(c) for c in cosines.values()])
    return build_vector(tmp_path / "v", chunks, vectors, 4)


def test_a_chunk_with_one_sentence_close_to_the_query_outranks_a_chunk_closer_on_average(tmp_path: Path) -> None:
    inner = _index(tmp_path, {"general": 0.7, "specific": 0.6, "other": 0.2})
    sentences = {
        "general": np.stack([_with_cosine(0.5, 2), _with_cosine(0.4, 3)]),
        "specific": np.stack([_with_cosine(0.1, 2), _with_cosine(0.95, 3)]),  # one sentence says it
        "other": np.stack([_with_cosine(0.2, 2)]),
    }
    flt = SearchFilter(tenant_id=T)
    assert [h.chunk_id for h in inner.search(Q, flt, 3)] == ["general", "specific", "other"]
    index = SentenceVectorIndex(inner, sentences, weight=1.0)
    hits = index.search(Q, flt, 3)
    assert [h.chunk_id for h in hits] == ["specific", "general", "other"]
    assert hits[0].score == pytest.approx(0.6 + 0.95, abs=1e-3)
    assert hits[1].score == pytest.approx(0.7 + 0.5, abs=1e-3)
    # weight 0: the inner order and scores, untouched
    plain = SentenceVectorIndex(inner, sentences, weight=0.0).search(Q, flt, 2)
    assert [(h.chunk_id, round(h.score, 2)) for h in plain] == [("general", 0.7), ("specific", 0.6)]


def test_candidates_beyond_k_are_rescored_and_a_chunk_without_sentences_counts_its_own_cosine(tmp_path: Path) -> None:
    inner = _index(tmp_path, {"a": 0.9, "b": 0.8, "c": 0.5})
    sentences = {"b": np.stack([_with_cosine(0.3, 2)]), "c": np.stack([_with_cosine(0.99, 2)])}  # "a" has none
    index = SentenceVectorIndex(inner, sentences, weight=1.0, candidates=3)
    hits = index.search(Q, SearchFilter(tenant_id=T), 1)
    assert [h.chunk_id for h in hits] == ["a"]  # 0.9 + 0.9 beats c's 0.5 + 0.99 and b's 0.8 + 0.3
    assert hits[0].score == pytest.approx(1.8, abs=1e-3)
    only_k = SentenceVectorIndex(inner, sentences, weight=2.0, candidates=1)
    assert [h.chunk_id for h in index.search(Q, SearchFilter(tenant_id=T), 3)] == ["a", "c", "b"]
    assert [h.chunk_id for h in only_k.search(Q, SearchFilter(tenant_id=T), 1)] == ["a"]  # c never a candidate
    assert index.search(Q, SearchFilter(tenant_id=T), 0) == []
    assert index.count(T) == 3 and index.dim == 4
    with pytest.raises(ValueError):
        SentenceVectorIndex(inner, sentences, weight=-1.0)


def test_chunk_sentences_drops_fragments_cuts_long_sentences_and_never_returns_nothing_for_words() -> None:
    text = "Billing\n\nYes. You can cancel at any time in the app. Long " + " ".join(["word"] * 59) + "."
    got = chunk_sentences(text, max_words=48)
    assert "You can cancel at any time in the app." in got
    assert "Billing" not in got and "Yes." not in got  # fewer than three words
    assert max(len(s.split()) for s in got) <= 48 and sum(len(s.split()) for s in got) == 9 + 60
    assert chunk_sentences("Yes. OK.") == ["Yes. OK."]
    assert chunk_sentences("   ") == []


# FakeEmbedder embeds every query as (1, 1, 1, 1) / 2; these three unit vectors are orthogonal to it and to each other.
_QF = np.full(4, 0.5, dtype=np.float32)
_ORTHO = [np.asarray(v, dtype=np.float32) for v in ((0.5, -0.5, 0.5, -0.5), (0.5, 0.5, -0.5, -0.5),
                                                    (0.5, -0.5, -0.5, 0.5))]


def _near_fake_query(c: float, side: int = 0) -> np.ndarray:
    return c * _QF + np.sqrt(1 - c * c) * _ORTHO[side]


def _records(ids: list[str]) -> list[ChunkRecord]:
    return [ChunkRecord(id=i, tenant_id=T, document_id=i, document_version=1, title=i, text=i) for i in ids]


def test_the_hybrid_retriever_ranks_the_vector_list_by_best_sentence_and_keeps_the_plain_cosine(
    tmp_path: Path,
) -> None:
    records = _records(["general", "specific"])
    inner = build_vector(tmp_path / "v", records, np.stack([_near_fake_query(0.7), _near_fake_query(0.6)]), 4)
    store = FakeSentenceChunkStore(records, {
        "general": pack(np.stack([_near_fake_query(0.5, 1)])),
        "specific": pack(np.stack([_near_fake_query(0.1, 1), _near_fake_query(0.95, 2)])),
    })

    def ranked(weight: float) -> list[tuple[str, dict[str, float]]]:
        settings = RetrievalSettings(title_links=False, sentence_weight=weight)
        retriever = HybridRetriever(NullKeywordIndex(), inner, NullGraphIndex(), FakeEmbedder(), store, settings)
        try:
            result = asyncio.run(retriever.retrieve("q", SearchFilter(tenant_id=T), 2))
        finally:
            retriever.close()
        return [(rc.chunk.id, {k: round(v, 2) for k, v in rc.scores.items() if k != "fused"}) for rc in result.chunks]

    assert ranked(1.0) == [("specific", {"vector": 0.6, "sentence": 0.95}),
                           ("general", {"vector": 0.7, "sentence": 0.5})]
    assert ranked(0.0) == [("general", {"vector": 0.7}), ("specific", {"vector": 0.6})]


def test_packed_sentence_vectors_round_trip_and_a_blob_of_another_dimension_is_ignored() -> None:
    rows = np.stack([_near_fake_query(0.3), _near_fake_query(0.8, 1)])
    back = unpack(pack(rows), 4)
    assert back is not None and back.shape == (2, 4) and np.allclose(back, rows, atol=1e-3)
    assert unpack(pack(rows), 3) is None and unpack(b"", 4) is None


def test_flattened_sentence_rows_are_cut_back_per_chunk() -> None:
    rows = np.arange(12, dtype=np.float32).reshape(3, 4)
    blocks = per_chunk_rows(rows, [["a", "b"], [], ["c"]])
    assert [b.tolist() for b in blocks] == [rows[:2].tolist(), [], rows[2:].tolist()]
    with pytest.raises(ValueError):
        per_chunk_rows(rows, [["a"], ["b"]])
