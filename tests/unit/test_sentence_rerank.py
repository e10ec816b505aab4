"""The sentence reranker: splitting and capping sentences, the best-sentences score, the blend with the fused score,
and the order the hybrid retriever returns with it (bag-of-words fake embedder)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from core.errors import AppError, ErrorCode
from core.settings import RetrievalSettings
from core.types import ChunkRecord, SearchFilter
from evaluation.beir import DictChunkStore
from retrieval.hybrid import HybridRetriever, blend
from retrieval.null import NullGraphIndex, NullVectorIndex
from retrieval.rerank import (
    SentenceReranker,
    build_reranker,
    query_terms,
    select_sentences,
    split_sentences,
    top_mean,
)
from tests.fakes import FakeBagOfWordsEmbedder, FakeIndex

pytestmark = pytest.mark.unit

FLT = SearchFilter(tenant_id="t")
FILLER = [
    "The committee met on Tuesday to review the budget.",
    "Several members asked about the parking arrangements.",
    "Lunch was served in the main hall afterwards.",
    "Minutes were circulated to every department.",
]
ANSWER = "The warranty on the hub lasts twenty four months."


def test_split_sentences_at_ends_and_line_breaks_and_cuts_long_ones() -> None:
    text = "Title line\nFirst one ends here. Second asks why? 3 follows! lower case stays. Last"
    assert split_sentences(text, max_words=48) == [
        "Title line", "First one ends here.", "Second asks why?", "3 follows! lower case stays.", "Last",
    ]
    long = " ".join(f"w{i}" for i in range(10))
    assert split_sentences(long, max_words=4) == ["w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9"]
    assert split_sentences("  \n ", max_words=4) == []


def test_select_sentences_keeps_the_cap_with_most_query_words_in_passage_order() -> None:
    sents = ["alpha beta", "nothing here", "gamma", "beta gamma delta", "the of and"]
    terms = query_terms("What is the beta gamma of delta?")
    assert terms == {"beta", "gamma", "delta"}
    assert select_sentences(terms, sents, 2) == [0, 3]  # overlaps: 1, 0, 1, 3, 0 -> best 3 then the earlier 1
    assert select_sentences(terms, sents, 10) == [0, 1, 2, 3, 4]


def test_top_mean() -> None:
    assert top_mean([0.1, 0.9, 0.5], 2) == pytest.approx(0.7)
    assert top_mean([0.4], 3) == pytest.approx(0.4)
    assert top_mean([], 2) == 0.0


def test_blend_z_normalises_both_scores_and_weight_zero_keeps_the_reranker_score() -> None:
    assert blend([3.0, 1.0], [0.0, 10.0], 0.0) == [3.0, 1.0]
    mixed = blend([3.0, 1.0, 2.0], [1.0, 3.0, 2.0], 1.0)
    assert mixed == pytest.approx([0.0, 0.0, 0.0])  # opposite orders cancel
    assert blend([3.0, 1.0, 2.0], [1.0, 3.0, 2.0], 2.0)[1] > blend([3.0, 1.0, 2.0], [1.0, 3.0, 2.0], 2.0)[0]
    assert blend([1.0, 1.0], [5.0, 5.0], 1.0) == [0.0, 0.0]  # no spread: no signal, no division by zero


def test_a_passage_whose_one_sentence_answers_beats_a_passage_of_scattered_words() -> None:
    emb = FakeBagOfWordsEmbedder()
    r = SentenceReranker(emb, top=1)
    answering = " ".join(FILLER[:2] + [ANSWER] + FILLER[2:])
    scattered = "The hub was moved. A warranty card exists. Months passed by."
    scores = r.score("How long is the warranty on the hub?", [scattered, answering])
    assert scores[1] > scores[0]
    assert r.score("anything", []) == []


def test_embedding_is_bounded_per_passage_and_shared_sentences_are_embedded_once() -> None:
    emb = FakeBagOfWordsEmbedder()
    r = SentenceReranker(emb, max_sentences=3, max_words=6)
    passage = " ".join(FILLER * 3)  # 12 sentences, several over 6 words
    r.score("budget parking", [passage, passage, FILLER[0]])
    # one batch (query-time work, ``embed_now``): the query, then at most 3 pieces per passage, the same pieces once
    assert len(emb.batches) == 1
    assert emb.batches[0] <= 1 + 3 + 1
    assert all(len(s.split()) <= 6 for s in r.sentences("budget parking", passage))


def _retriever(reranker: SentenceReranker | None, order: list[str], store: DictChunkStore,
               candidates: int = 30) -> HybridRetriever:
    settings = RetrievalSettings(rerank_candidates=candidates)
    return HybridRetriever(FakeIndex(order), NullVectorIndex(4), NullGraphIndex(), FakeBagOfWordsEmbedder(), store,
                           settings, reranker)


def _chunk(cid: str, text: str) -> ChunkRecord:
    return ChunkRecord(id=cid, tenant_id="t", document_id=cid, document_version=1, title="", text=text)


def test_hybrid_moves_the_answering_chunk_up_and_keeps_the_tail_in_fused_order() -> None:
    chunks = [_chunk(f"f{i}", FILLER[i % 4] + " " + FILLER[(i + 1) % 4]) for i in range(4)]
    chunks.append(_chunk("ans", " ".join([FILLER[1], ANSWER, FILLER[3]])))
    store = DictChunkStore(chunks)
    order = ["f0", "f1", "f2", "ans", "f3"]
    query = "How long does the hub warranty last?"

    plain = asyncio.run(_retriever(None, order, store).retrieve(query, FLT, 5))
    assert [c.chunk.id for c in plain.chunks] == order

    rr = SentenceReranker(FakeBagOfWordsEmbedder(), fused_weight=0.5)
    res = asyncio.run(_retriever(rr, order, store).retrieve(query, FLT, 5))
    assert res.chunks[0].chunk.id == "ans"
    assert res.chunks[0].ranks["fused"] == 4 and res.chunks[0].ranks["rerank"] == 1
    assert "rerank" in res.chunks[0].scores and "rerank" in res.timings_ms

    # only the first 3 are re-scored: "ans" (4th) stays below them, in fused order
    res = asyncio.run(_retriever(rr, order, store, candidates=3).retrieve(query, FLT, 5))
    assert [c.chunk.id for c in res.chunks][3:] == ["ans", "f3"]

    # a large weight on the fused score keeps the fused order
    heavy = SentenceReranker(FakeBagOfWordsEmbedder(), fused_weight=50.0)
    res = asyncio.run(_retriever(heavy, order, store).retrieve(query, FLT, 5))
    assert [c.chunk.id for c in res.chunks] == order


def test_build_sentence_reranker_from_settings_needs_an_embedder() -> None:
    settings = RetrievalSettings(reranker="sentence", sentence_rerank_top=3, sentence_rerank_max_sentences=5,
                                 sentence_rerank_max_words=20, sentence_rerank_fused_weight=0.5)
    with pytest.raises(AppError) as err:
        build_reranker(settings)
    assert err.value.code is ErrorCode.CONFIGURATION
    r = build_reranker(settings, FakeBagOfWordsEmbedder())
    assert isinstance(r, SentenceReranker)
    assert (r.top, r.max_sentences, r.max_words, r.fused_weight) == (3, 5, 20, 0.5)
    assert r.name == "sentence:bag-of-words"


def test_offline_sweep_matches_the_reranker_functions_and_prints_every_table() -> None:
    from evaluation.beir import BeirDataset
    from evaluation.rerank import SetData, Variant, report, rerank_run

    ds = BeirDataset(name="toy", chunks=[_chunk(c, c) for c in "abc"], queries={"q": "query"},
                     qrels={"q": {"c": 1}}, corpus_hash="x")
    fused = {"q": [("a", 3.0), ("b", 2.0), ("c", 1.0)]}
    sentences = {"a": ["a1", "a2"], "b": ["b1"], "c": ["c1", "c2"]}
    sims = {"q": {"a": np.array([0.1, 0.2]), "b": np.array([0.3]), "c": np.array([0.5, 0.0])}}
    data = SetData("toy", ds, fused, sentences, sims, {20: (10.0, 20.0, 15.0), 30: (11.0, 21.0, 16.0),
                                                        50: (12.0, 22.0, 17.0)})
    assert rerank_run(data, Variant(30, 1, 0.0, 8))["q"] == ["c", "b", "a"]  # best sentence: 0.5, 0.3, 0.2
    assert rerank_run(data, Variant(30, 2, 0.0, 8))["q"] == ["b", "c", "a"]  # means: b 0.3 > c 0.25 > a 0.15
    assert rerank_run(data, Variant(30, 1, 50.0, 8))["q"] == ["a", "b", "c"]  # fused order dominates
    assert rerank_run(data, Variant(2, 1, 0.0, 8))["q"] == ["b", "a", "c"]  # only the first two re-scored
    text = report([data])
    assert "| fused (no rerank) | 0.5000 |" in text and "| toy | " in text and "10 / 20 (15)" in text
