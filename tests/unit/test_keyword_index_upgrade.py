"""An index directory from before per-tenant BM25: rebuilt per tenant from the stored chunks, old files removed."""

import pytest
import tantivy

from app.cli import migrate_database
from app.services.ingestion import rebuild_legacy_keyword_index
from core.db import repositories as repo
from core.db.chunk_store import DbChunkStore
from core.db.session import Database
from core.types import ChunkRecord, SearchFilter
from retrieval.keyword import TantivyKeywordIndex
from retrieval.keyword.tantivy_index import ANALYZER, _schema, english_analyzer

pytestmark = pytest.mark.unit


def _store_chunks(db: Database, tenant: str, n_docs: int, per_doc: int) -> list[str]:
    doc_ids = []
    with db.session() as s:
        for d in range(n_docs):
            doc = repo.create_document(
                session=s, tenant_id=tenant, filename=f"{tenant}-{d}.md", title=f"Router guide {d}",
                content_hash=f"{tenant}{d}", storage_path=f"x/{tenant}{d}",
            )
            records = [
                ChunkRecord(
                    id=ChunkRecord.make_id(tenant, doc.id, 1, i, f"t{i}"), tenant_id=tenant, document_id=doc.id,
                    document_version=1, title=doc.title, text=f"Restart the {tenant} router, step {i} of doc {d}.",
                    order=i,
                )
                for i in range(per_doc)
            ]
            repo.replace_chunks(session=s, document=doc, chunks=records, embedder_version="fake")
            doc_ids.append(doc.id)
    return doc_ids


def test_a_shared_legacy_index_is_rebuilt_per_tenant_from_the_database(make_settings, tmp_path, monkeypatch):
    settings = make_settings()
    migrate_database(settings)
    db = Database(settings.database_url)
    acme_docs = _store_chunks(db, "acme", n_docs=7, per_doc=3)
    _store_chunks(db, "globex", n_docs=2, per_doc=2)
    root = tmp_path / "bm25"
    root.mkdir()
    legacy = tantivy.Index(_schema(), path=str(root))  # the old layout: one index at the top
    legacy.register_tokenizer(ANALYZER, english_analyzer())
    writer = legacy.writer(15_000_000, 1)
    writer.add_document(tantivy.Document(chunk_id="old"))
    writer.commit()
    writer.wait_merging_threads()

    index = TantivyKeywordIndex(root)
    assert index.has_legacy_shared_index
    assert index.search("router", SearchFilter(tenant_id="acme"), 50) == []  # the shared index is not read
    monkeypatch.setattr("app.services.ingestion.REBUILD_BATCH", 4)  # several batches, documents never split
    written = rebuild_legacy_keyword_index(db=db, chunk_store=DbChunkStore(db), keyword=index)
    assert written == 7 * 3 + 2 * 2
    assert not index.has_legacy_shared_index and (root / "tenants").is_dir()
    hits = index.search("router", SearchFilter(tenant_id="acme"), 50)
    assert len(hits) == 21
    with db.session() as s:
        stored = {c.id for d in acme_docs for c in repo.list_chunks(session=s, document_id=d)}
    assert {h.chunk_id for h in hits} == stored
    assert len(index.search("router", SearchFilter(tenant_id="globex"), 50)) == 4
    assert rebuild_legacy_keyword_index(db=db, chunk_store=DbChunkStore(db), keyword=index) == 0  # done once
    index.close()
    db.dispose()
