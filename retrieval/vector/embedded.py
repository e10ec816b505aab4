"""Embedded dense index: float32 row store + per-tenant usearch HNSW (float16) + filter masks; snapshot + WAL.

Search pushes the filter down: a boolean mask of admitted rows is computed from per-row metadata first. When few
rows are admitted (``<= exact_max_rows``) the query is scored exactly over just those rows; otherwise the tenant's
HNSW graph is searched with oversampling (scaled by the filter's selectivity within the tenant), candidates are kept
only where the mask admits them and re-scored exactly. If the graph cannot supply ``k`` admitted rows, it falls back
to exact search, so a filter never starves results. Chosen by measurement (``benchmarks/bench_indexes.py``): exact
numpy over 100k x 384 is 8-30 ms single-threaded (memory-bound) and grows linearly, usearch HNSW is ~1 ms; faiss HNSW
cannot delete. usearch's Python API has no filtered (predicate) search, hence the mask + oversampling.

On disk (``directory``)::

    CURRENT              generation number of the live snapshot
    gen-<N>/rows.npz     float32 vectors + per-row metadata arrays
    gen-<N>/meta.json    chunk ids, ACL groups, tags, vocabularies
    gen-<N>/ann-<T>.usearch  HNSW graph of tenant code T (keys are row numbers; see graphs.py)
    wal-<N>.log          document writes after snapshot N (replayed on open)

A checkpoint (new snapshot, WAL truncated) runs on ``close()`` and when the WAL passes ``wal_max_bytes``.
Writes hold a writer lock; searches hold a reader lock, so a reader sees a document's old rows or its new rows.
Another process opening the same directory (e.g. the API while a worker writes) picks up new writes on its own: a
search checks the WAL size and snapshot generation at most every ``refresh_interval_s`` and replays what is new.
Only one process may write.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.vector import wal
from retrieval.vector._rwlock import RWLock
from retrieval.vector.graphs import TenantGraphs
from retrieval.vector.rows import RowTable


class EmbeddedVectorIndex:
    """:class:`retrieval.protocols.VectorIndex` stored in ``directory``; cosine similarity on normalised vectors."""

    name = "dense"

    def __init__(
        self,
        directory: Path | str,
        dim: int,
        *,
        exact_max_rows: int = 8192,
        connectivity: int = 16,
        expansion_add: int = 64,
        expansion_search: int = 256,
        wal_max_bytes: int = 256 * 1024 * 1024,
        refresh_interval_s: float = 1.0,
    ) -> None:
        self.directory = Path(directory)
        self.dim = dim
        self.exact_max_rows = exact_max_rows
        self._ann_args = (connectivity, expansion_add, expansion_search)
        self.wal_max_bytes = wal_max_bytes
        self.refresh_interval_s = refresh_interval_s
        self._last_check = time.monotonic()
        self._lock = RWLock()
        self._dirty = False
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._load()
        except (OSError, ValueError, KeyError) as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"cannot open vector index at {self.directory}: {exc}") from exc

    # -- persistence ----------------------------------------------------------------------------------------------
    def _current_gen(self) -> int:
        cur = self.directory / "CURRENT"
        return int(cur.read_text().strip()) if cur.exists() else 0

    def _wal_path(self, gen: int) -> Path:
        return self.directory / f"wal-{gen:06d}.log"

    def _load(self) -> None:
        gen = self._current_gen()
        snap = self.directory / f"gen-{gen:06d}"
        ann = TenantGraphs(self.dim, *self._ann_args)
        if gen and snap.exists():
            meta = json.loads((snap / "meta.json").read_text())
            if int(meta["dim"]) != self.dim:
                raise ValueError(f"index dimension is {meta['dim']}, expected {self.dim}")
            with np.load(snap / "rows.npz") as npz:
                rows = RowTable.from_state({k: npz[k] for k in npz.files}, meta)
            ann.load(snap)
        else:
            rows = RowTable(self.dim)
        self._rows, self._ann, self._gen, self._wal_offset = rows, ann, gen, 0
        self._replay()

    def _replay(self) -> None:
        for rec, end in wal.read_records(self._wal_path(self._gen), self._wal_offset, self.dim):
            self._apply(rec.document_id, rec.chunks, rec.vectors)
            self._wal_offset = end

    def refresh(self) -> None:
        """Pick up writes another process made to the same directory (searches also do this, at most every
        ``refresh_interval_s``)."""
        with self._lock.write():
            self._last_check = time.monotonic()
            for attempt in range(3):
                try:
                    if self._current_gen() != self._gen:
                        self._load()
                    else:
                        self._replay()
                    return
                except (OSError, ValueError, KeyError):  # a concurrent checkpoint removed what we were reading
                    if attempt == 2:
                        raise

    def _maybe_refresh(self) -> None:
        if time.monotonic() - self._last_check < self.refresh_interval_s:
            return
        self._last_check = time.monotonic()
        try:
            wal_size = self._wal_path(self._gen).stat().st_size
        except FileNotFoundError:
            wal_size = 0
        if wal_size != self._wal_offset or self._current_gen() != self._gen:
            self.refresh()

    def checkpoint(self) -> None:
        """Write a new snapshot and start an empty WAL."""
        with self._lock.write():
            self._checkpoint()

    def _checkpoint(self) -> None:
        gen = self._gen + 1
        snap = self.directory / f"gen-{gen:06d}"
        tmp = self.directory / f"gen-{gen:06d}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        arrays, meta = self._rows.state()
        np.savez(tmp / "rows.npz", **arrays)  # type: ignore[arg-type]
        (tmp / "meta.json").write_text(json.dumps(meta))
        self._ann.save(tmp)
        os.replace(tmp, snap)
        cur_tmp = self.directory / "CURRENT.tmp"
        cur_tmp.write_text(str(gen))
        os.replace(cur_tmp, self.directory / "CURRENT")
        old_gen, self._gen, self._wal_offset = self._gen, gen, 0
        shutil.rmtree(self.directory / f"gen-{old_gen:06d}", ignore_errors=True)
        self._wal_path(old_gen).unlink(missing_ok=True)

    # -- writes ---------------------------------------------------------------------------------------------------
    def _apply(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        dead = self._rows.kill_document(document_id)
        if dead:
            dead_rows = np.asarray(dead, dtype=np.int64)
            self._ann.remove(self._rows.tenant[dead_rows], dead_rows)
        if len(chunks):
            rows = np.asarray(self._rows.append(chunks, vectors), dtype=np.int64)
            self._ann.add(self._rows.tenant[rows], rows, np.asarray(vectors, dtype=np.float32))

    def _prepare(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> np.ndarray:
        for c in chunks:
            if c.document_id != document_id:
                raise AppError(ErrorCode.VALIDATION, f"chunk {c.id} belongs to {c.document_id}, not {document_id}")
        if not chunks:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = np.asarray(vectors, dtype=np.float32).reshape(len(chunks), -1)
        if vecs.shape[1] != self.dim:
            raise AppError(ErrorCode.VALIDATION, f"vectors have dimension {vecs.shape[1]}, index expects {self.dim}")
        norms = np.linalg.norm(vecs, axis=1, keepdims=True)
        return (vecs / np.where(norms == 0, 1, norms)).astype(np.float32)

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> None:
        self._write(document_id, chunks, self._prepare(document_id, chunks, vectors))

    def upsert_many(self, documents: Sequence[tuple[str, Sequence[ChunkRecord], np.ndarray]]) -> None:
        """Bulk load: several documents, one WAL append and one graph insert (same semantics as repeated upserts)."""
        if len({d for d, _, _ in documents}) != len(documents):
            raise AppError(ErrorCode.VALIDATION, "upsert_many takes each document id at most once")
        items = [(d, cs, self._prepare(d, cs, v)) for d, cs, v in documents]
        blob = b"".join(wal.encode(d, c, v) for d, c, v in items)
        with self._lock.write():
            path = self._wal_path(self._gen)
            with path.open("ab") as fh:
                fh.write(blob)
                fh.flush()
                os.fsync(fh.fileno())
            dead = [r for d, _, _ in items for r in self._rows.kill_document(d)]
            if dead:
                dead_rows = np.asarray(dead, dtype=np.int64)
                self._ann.remove(self._rows.tenant[dead_rows], dead_rows)
            chunks_all = [c for _, cs, _ in items for c in cs]
            if chunks_all:
                # Round through float16 as the WAL does, so live and replayed indexes hold the same vectors.
                vecs = np.concatenate([v for _, _, v in items]).astype(np.float16).astype(np.float32)
                rows = np.asarray(self._rows.append(chunks_all, vecs), dtype=np.int64)
                self._ann.add(self._rows.tenant[rows], rows, vecs, threads=0)
            self._dirty = True
            self._wal_offset = path.stat().st_size
            if self._wal_offset > self.wal_max_bytes:
                self._checkpoint()

    def delete_document(self, document_id: str) -> None:
        with self._lock.read():
            known = document_id in self._rows.doc_rows
        if known:
            self._write(document_id, (), np.zeros((0, self.dim), dtype=np.float32))

    def _write(self, document_id: str, chunks: Sequence[ChunkRecord], vecs: np.ndarray) -> None:
        record = wal.encode(document_id, chunks, vecs)
        with self._lock.write():
            path = self._wal_path(self._gen)
            with path.open("ab") as fh:
                fh.write(record)
                fh.flush()
                os.fsync(fh.fileno())
            # Store exactly what a replay would store (float16), so reopened and live indexes agree.
            self._apply(document_id, chunks, vecs.astype(np.float16).astype(np.float32))
            self._dirty = True
            self._wal_offset = path.stat().st_size
            if self._wal_offset > self.wal_max_bytes:
                self._checkpoint()

    # -- reads ----------------------------------------------------------------------------------------------------
    def search(self, vector: np.ndarray, flt: SearchFilter, k: int) -> list[Hit]:
        q = np.asarray(vector, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dim:
            raise AppError(ErrorCode.VALIDATION, f"query has dimension {q.shape[0]}, index expects {self.dim}")
        if k <= 0:
            return []
        self._maybe_refresh()
        norm = float(np.linalg.norm(q))
        q = q / norm if norm else q
        with self._lock.read():
            mask = self._rows.mask(flt)
            admitted = int(mask.sum())
            if admitted == 0:
                return []
            tenant = self._rows.tenants.codes[flt.tenant_id]
            if admitted <= self.exact_max_rows or self._ann.size(tenant) == 0:
                cand = np.flatnonzero(mask)
            else:
                cand = self._ann_candidates(tenant, q, mask, admitted, k)
            # einsum, not ``@``: multi-threaded BLAS matvec collapses (~200x) on busy cores; this is memory-bound.
            scores = np.einsum("ij,j->i", self._rows.vectors[cand], q)
            top = np.argsort(-scores, kind="stable")[:k]
            ids = self._rows.chunk_ids
            return [Hit(ids[int(cand[i])], float(scores[i])) for i in top]

    def _ann_candidates(self, tenant: int, q: np.ndarray, mask: np.ndarray, admitted: int, k: int) -> np.ndarray:
        total = self._ann.size(tenant)
        fetch = min(total, max(k, int(1.3 * k * total / admitted)))
        while True:
            keys = self._ann.search(tenant, q, fetch)
            keys = keys[(keys >= 0) & (keys < self._rows.n)]
            keys = keys[mask[keys]]
            if len(keys) >= k:
                return keys
            if fetch >= total:
                return np.flatnonzero(mask)  # the graph could not supply k admitted rows: exact fallback
            fetch = min(total, fetch * 3)

    def count(self, tenant_id: str | None = None) -> int:
        with self._lock.read():
            rows = self._rows
            alive = rows.alive[: rows.n]
            if tenant_id is None:
                return int(alive.sum())
            code = rows.tenants.codes.get(tenant_id)
            return 0 if code is None else int((alive & (rows.tenant[: rows.n] == code)).sum())

    def close(self) -> None:
        with self._lock.write():
            if self._dirty:
                self._checkpoint()
                self._dirty = False
