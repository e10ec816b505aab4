"""Chunk records looked up by id from the database (the indexes return ids)."""

from __future__ import annotations

from collections.abc import Sequence

from core.db import repositories as repo
from core.db.session import Database
from core.types import ChunkRecord


class DbChunkStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def get_many(self, chunk_ids: Sequence[str]) -> dict[str, ChunkRecord]:
        with self.db.session() as s:
            return repo.get_chunks(session=s, chunk_ids=chunk_ids)

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, bytes]:
        """Chunk id -> packed sentence embeddings (:mod:`retrieval.sentences`), for the chunks that have them."""
        with self.db.session() as s:
            return repo.get_sentence_vectors(session=s, chunk_ids=chunk_ids)
