"""The three indexes one deployment writes and reads (keyword, vector, graph), built from settings in one place.

Both sides use :func:`build_indexes`: the query service (to search) and the ingestion pipeline (to write, one writer
at a time through :meth:`Indexes.writing`). Keyword and vector are embedded (tantivy, usearch) or one Weaviate
collection, by ``settings.index.backend``; the graph is networkx on disk under the index directory or tables in the
application's PostgreSQL database, by ``settings.index.graph_backend``.
"""

from __future__ import annotations

import fcntl
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from sqlalchemy.orm import Session

from core.db.session import Database
from core.settings import Settings
from core.types import ChunkRecord
from retrieval.factory import build_graph_index, build_text_indexes
from retrieval.protocols import Embedder, GraphIndex, KeywordIndex, TransactionalGraphIndex, VectorIndex

log = logging.getLogger(__name__)


@dataclass
class Indexes:
    keyword: KeywordIndex
    vector: VectorIndex
    graph: GraphIndex
    lock_path: Path

    _thread_lock = threading.Lock()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """One writer at a time across threads and processes (an flock on a file in the index directory)."""
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        with self._thread_lock, open(self.lock_path, "a+") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def upsert(
        self,
        document_id: str,
        chunks: Sequence[ChunkRecord],
        vectors: np.ndarray,
        entities: Sequence[Sequence[str]],
        *,
        session: Session | None = None,
    ) -> None:
        """Write the document to every index. A graph kept in the database (``TransactionalGraphIndex``) writes
        through ``session``, so it commits with the caller's chunk rows."""
        with self.writing():
            self.keyword.upsert_document(document_id, chunks)
            self.vector.upsert_document(document_id, chunks, vectors)
            if session is not None and isinstance(self.graph, TransactionalGraphIndex):
                self.graph.upsert_document_in(session, document_id, chunks, entities)
            else:
                self.graph.upsert_document(document_id, chunks, entities)

    def delete(self, document_id: str, *, session: Session | None = None) -> None:
        with self.writing():
            self.keyword.delete_document(document_id)
            self.vector.delete_document(document_id)
            if session is not None and isinstance(self.graph, TransactionalGraphIndex):
                self.graph.delete_document_in(session, document_id)
            else:
                self.graph.delete_document(document_id)

    def close(self) -> None:
        for idx in (self.keyword, self.vector, self.graph):
            try:
                idx.close()
            except Exception:  # noqa: BLE001 - closing is best effort
                log.warning("closing %s failed", getattr(idx, "name", idx), exc_info=True)


def build_indexes(settings: Settings, embedder: Embedder, db: Database | None = None) -> Indexes:
    """Keyword + vector (embedded or Weaviate, by settings) and the graph (networkx on disk under the data dir, or
    PostgreSQL tables in ``db``, by ``index.graph_backend``)."""
    root = settings.index_dir
    root.mkdir(parents=True, exist_ok=True)
    keyword, vector = build_text_indexes(settings, root, embedder.dim)
    graph = build_graph_index(settings, root, engine=db.engine if db is not None else None)
    return Indexes(keyword=keyword, vector=vector, graph=graph, lock_path=root / ".write.lock")
