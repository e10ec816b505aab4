"""Builds the ingestion side from settings: database, indexes, embedder, entity extractor, pipeline.

Used by the API process (embedded mode runs the pipeline in-process) and by each Celery worker process.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.db.session import Database
from core.filestore import FileStore, build_file_store
from core.settings import Settings
from ingestion.entities import EntityExtractor
from ingestion.pipeline import Indexes, IngestPipeline
from retrieval.embedders import build_embedder
from retrieval.factory import build_graph_index
from retrieval.factory import build_indexes as build_text_indexes
from retrieval.protocols import Embedder


@dataclass
class IngestRuntime:
    settings: Settings
    db: Database
    indexes: Indexes
    embedder: Embedder
    pipeline: IngestPipeline
    files: FileStore

    def close(self) -> None:
        self.indexes.close()
        self.db.dispose()


def build_indexes(settings: Settings, embedder: Embedder, db: Database | None = None) -> Indexes:
    """Keyword + vector (embedded or Weaviate, by settings) and the graph (networkx on disk under the data dir, or
    PostgreSQL tables in ``db``, by ``index.graph_backend``)."""
    root = settings.index_dir
    root.mkdir(parents=True, exist_ok=True)
    keyword, vector = build_text_indexes(settings, root, embedder.dim)
    graph = build_graph_index(settings, root, engine=db.engine if db is not None else None)
    return Indexes(keyword=keyword, vector=vector, graph=graph, lock_path=root / ".write.lock")


def build_ingest_runtime(
    settings: Settings,
    *,
    db: Database | None = None,
    embedder: Embedder | None = None,
    indexes: Indexes | None = None,
) -> IngestRuntime:
    db = db or Database(settings.database_url, connect_timeout_s=settings.database.connect_timeout_s)
    embedder = embedder or build_embedder(settings.embedding)
    extractor = EntityExtractor()
    indexes = indexes or build_indexes(settings, embedder, db)
    files = build_file_store(settings)
    pipeline = IngestPipeline(
        settings=settings, db=db, indexes=indexes, embedder=embedder, extractor=extractor, files=files
    )
    return IngestRuntime(settings=settings, db=db, indexes=indexes, embedder=embedder, pipeline=pipeline, files=files)
