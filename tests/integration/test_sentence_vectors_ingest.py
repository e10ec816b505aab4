"""Sentence vectors end to end on real parts: a demo document through the real parser, chunker and MiniLM with
``ingestion.sentence_vectors`` on, stored in SQLite and PostgreSQL, read back by the chunk store and used by the
hybrid retriever (plain cosine kept as the vector score, the best sentence's beside it); with it off nothing is
stored and the scores are the cosine alone."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.chunk_store import DbChunkStore
from core.settings import Settings
from core.types import SearchFilter
from retrieval.sentences import chunk_sentences, unpack
from tests.conftest import fresh_pg_database

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOC = "billing-faq.md"
QUESTION = "I don't want to pay for Protect anymore. How do I stop it?"


def _ingest(data_dir: Path, database: dict[str, str], *, sentence_vectors: bool):  # noqa: ANN202
    from app.main import build_container

    settings = Settings(_env_file=None, data_dir=data_dir, database=database,
                        ingestion={"sentence_vectors": sentence_vectors},
                        retrieval={"timeout_s": 30.0, "sentence_weight": 1.0 if sentence_vectors else 0.0})
    migrate_database(settings)
    container = build_container(settings)
    container.ingest.submit(tenant_id="default", filename=DOC, data=(REPO / "demo" / "kb" / DOC).read_bytes())
    container.dispatcher.wait(timeout=600)
    return container


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request):  # noqa: ANN001, ANN201
    if request.param == "sqlite":
        yield {}
        return
    with fresh_pg_database() as url:
        yield {"url": url}


def test_ingestion_stores_each_chunks_sentence_vectors_and_retrieval_scores_by_them(tmp_path, database) -> None:  # noqa: ANN001
    container = _ingest(tmp_path / "data", database, sentence_vectors=True)
    try:
        with container.db.session() as s:
            doc = next(d for d in repo.list_documents(session=s, tenant_id="default") if d.filename == DOC)
            assert doc.status == "indexed", doc.failure_reason
            chunks = repo.list_chunks(session=s, document_id=doc.id)
        blobs = DbChunkStore(container.db).sentence_vectors([c.id for c in chunks])
        assert len(chunks) > 5 and set(blobs) == {c.id for c in chunks}
        embedder = container.answers.embedder
        for chunk in chunks:
            rows = unpack(blobs[chunk.id], embedder.dim)
            assert rows is not None and len(rows) == len(chunk_sentences(chunk.text))
            assert np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-2)  # normalised, as the chunk vectors
        # a stored sentence vector is the embedding of that sentence (float16 aside)
        first = chunk_sentences(chunks[0].text)[0]
        assert float(unpack(blobs[chunks[0].id], embedder.dim)[0] @ embedder.embed_query(first)) > 0.99  # type: ignore[index]

        result = asyncio.run(container.answers.retriever.retrieve(QUESTION, SearchFilter(tenant_id="default"), 8))
        dense = [rc for rc in result.chunks if "vector" in rc.scores]
        assert dense and all("sentence" in rc.scores for rc in dense)
        assert all(-1.0 <= rc.scores["vector"] <= 1.0 and -1.0 <= rc.scores["sentence"] <= 1.0 for rc in dense)
        assert any(rc.scores["sentence"] > rc.scores["vector"] for rc in dense)  # one sentence matches better
    finally:
        container.close()


def test_with_sentence_vectors_off_nothing_is_stored_and_scores_are_the_cosine(tmp_path) -> None:  # noqa: ANN001
    container = _ingest(tmp_path / "data", {}, sentence_vectors=False)
    try:
        with container.db.session() as s:
            doc = repo.list_documents(session=s, tenant_id="default")[0]
            ids = [c.id for c in repo.list_chunks(session=s, document_id=doc.id)]
        assert ids and DbChunkStore(container.db).sentence_vectors(ids) == {}
        result = asyncio.run(container.answers.retriever.retrieve(QUESTION, SearchFilter(tenant_id="default"), 8))
        assert result.chunks and not any("sentence" in rc.scores for rc in result.chunks)
    finally:
        container.close()
