"""Splitting a BEIR corpus as ingestion splits an upload, and ranking documents by their best chunk."""

from __future__ import annotations

from core.types import ChunkRecord
from evaluation.beir import EVAL_TENANT, BeirDataset, documents_ranked, split_like_ingestion


def _words(text: str) -> int:
    return len(text.split())


def _dataset(text: str) -> BeirDataset:
    doc = ChunkRecord(id="d1", tenant_id=EVAL_TENANT, document_id="d1", document_version=1, title="Tides", text=text)
    empty = ChunkRecord(id="d2", tenant_id=EVAL_TENANT, document_id="d2", document_version=1, title="", text=" ")
    return BeirDataset("tiny", [doc, empty], {"q": "tides"}, {"q": {"d1": 1}}, "hash")


def test_a_long_document_becomes_chunks_headed_by_its_title_that_point_back_to_it() -> None:
    sentences = [f"Sentence {i} says the Moon pulls the sea." for i in range(40)]
    ds = split_like_ingestion(_dataset(" ".join(sentences)), _words, target_tokens=60, overlap_tokens=8,
                              table_max_tokens=100)
    assert len(ds.chunks) > 3  # 320 words in chunks of about 60; the empty document gives none
    assert [c.id for c in ds.chunks] == [f"d1#{i}" for i in range(len(ds.chunks))]
    assert {c.document_id for c in ds.chunks} == {"d1"}
    assert all(c.text.startswith("Tides\n\n") and _words(c.text) <= 60 for c in ds.chunks)
    body = " ".join(c.text.removeprefix("Tides\n\n") for c in ds.chunks)
    assert all(s in body for s in sentences)  # nothing lost
    assert ds.chunking == "ingestion-60-8-100" and ds.qrels == {"q": {"d1": 1}}
    # the embedder sees a chunk's own text (as ingestion embeds it); a whole document is title and text
    assert ds.embed_text(ds.chunks[0]) == ds.chunks[0].text
    whole = _dataset("Short text.")
    assert whole.embed_text(whole.chunks[0]) == "Tides\nShort text."


def test_a_document_ranks_where_its_best_chunk_does() -> None:
    assert documents_ranked(["d2", "d1", "d2", "d3", "d1"]) == ["d2", "d1", "d3"]
    assert documents_ranked([]) == []
