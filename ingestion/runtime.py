"""Builds the ingestion side from settings: database, indexes, embedder, entity extractor, pipeline.

Used by the API process (embedded mode runs the pipeline in-process) and by each Celery worker process.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.core.db.session import Database
from app.core.settings import Settings
from ingestion.pipeline import Indexes, IngestPipeline
from retrieval.embedders import build_embedder
from retrieval.factory import build_graph_index, build_keyword_index, build_vector_index
from retrieval.protocols import Embedder


@dataclass
class IngestRuntime:
    settings: Settings
    db: Database
    indexes: Indexes
    embedder: Embedder
    pipeline: IngestPipeline

    def close(self) -> None:
        self.indexes.close()
        self.db.dispose()


def build_indexes(settings: Settings, embedder: Embedder) -> Indexes:
    root = settings.index_dir
    root.mkdir(parents=True, exist_ok=True)
    return Indexes(
        keyword=build_keyword_index(settings, root),
        vector=build_vector_index(settings, root, embedder.dim),
        graph=build_graph_index(settings, root),
        lock_path=root / ".write.lock",
    )


def build_ingest_runtime(
    settings: Settings, *, db: Database | None = None, embedder: Embedder | None = None,
    indexes: Indexes | None = None,
) -> IngestRuntime:
    from ingestion.entities import EntityExtractor

    db = db or Database(settings.database_url, connect_timeout_s=settings.database.connect_timeout_s)
    embedder = embedder or build_embedder(settings.embedding)
    indexes = indexes or build_indexes(settings, embedder)
    pipeline = IngestPipeline(settings=settings, db=db, indexes=indexes, embedder=embedder,
                              extractor=EntityExtractor())
    return IngestRuntime(settings=settings, db=db, indexes=indexes, embedder=embedder, pipeline=pipeline)
