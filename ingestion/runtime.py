"""Builds the ingestion side from settings: database, indexes, embedder, entity extractor, pipeline.

Used by each Celery worker process; the API process builds its own parts (``app.container``) and
runs an :class:`IngestPipeline` in-process in embedded mode. Indexes come from :func:`retrieval.indexes.build_indexes`.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.db.session import Database
from core.filestore import FileStore, build_file_store
from core.settings import Settings
from ingestion.entities import EntityExtractor
from ingestion.pipeline import IngestPipeline
from retrieval.embedders import build_embedder
from retrieval.indexes import Indexes, build_indexes
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
