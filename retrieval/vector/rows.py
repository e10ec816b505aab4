"""Row storage of the embedded vector index: float32 vectors plus per-row filter metadata, and filter masks.

Rows are append-only; deleting a document marks its rows dead (``alive[row] = False``). Row ids are stable, so the
ANN graph keys them directly. Multi-valued fields (ACL groups, tags) are kept as posting lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.types import ChunkRecord, SearchFilter
from retrieval._timeutil import epoch_micros

NO_TIME = np.iinfo(np.int64).min


class Vocab:
    """String <-> small int code."""

    def __init__(self, items: Sequence[str] = ()) -> None:
        self.items: list[str] = list(items)
        self.codes: dict[str, int] = {s: i for i, s in enumerate(self.items)}

    def code(self, value: str) -> int:
        found = self.codes.get(value)
        if found is None:
            found = self.codes[value] = len(self.items)
            self.items.append(value)
        return found


class RowTable:
    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self.n = 0
        self.vectors = np.zeros((capacity, dim), dtype=np.float32)
        self.alive = np.zeros(capacity, dtype=bool)
        self.tenant = np.zeros(capacity, dtype=np.int32)
        self.doc_type = np.zeros(capacity, dtype=np.int32)
        self.document = np.zeros(capacity, dtype=np.int32)
        self.created = np.full(capacity, NO_TIME, dtype=np.int64)
        self.acl_public = np.zeros(capacity, dtype=bool)
        self.chunk_ids: list[str] = []
        self.acl: list[tuple[str, ...]] = []
        self.tags: list[tuple[str, ...]] = []
        self.tenants, self.doc_types, self.documents = Vocab(), Vocab(), Vocab()
        self.doc_rows: dict[str, list[int]] = {}
        self.acl_post: dict[str, list[int]] = {}
        self.tag_post: dict[str, list[int]] = {}
        self._post_cache: dict[tuple[str, str], np.ndarray] = {}

    # -- writes ---------------------------------------------------------------------------------------------------
    def _grow(self, need: int) -> None:
        cap = len(self.alive)
        if need <= cap:
            return
        new = max(need, int(cap * 1.25) + 1024)
        for name in ("vectors", "alive", "tenant", "doc_type", "document", "created", "acl_public"):
            old = getattr(self, name)
            arr = np.full((new, *old.shape[1:]), NO_TIME if name == "created" else 0, dtype=old.dtype)
            arr[: self.n] = old[: self.n]
            setattr(self, name, arr)

    def append(self, chunks: Sequence[ChunkRecord], vectors: np.ndarray) -> list[int]:
        self._grow(self.n + len(chunks))
        rows = list(range(self.n, self.n + len(chunks)))
        self.vectors[self.n : self.n + len(chunks)] = vectors
        for row, c in zip(rows, chunks, strict=True):
            self.alive[row] = True
            self.tenant[row] = self.tenants.code(c.tenant_id)
            self.doc_type[row] = self.doc_types.code(c.doc_type)
            self.document[row] = self.documents.code(c.document_id)
            self.created[row] = NO_TIME if c.created_at is None else epoch_micros(c.created_at)
            self.acl_public[row] = not c.acl_groups
            self.chunk_ids.append(c.id)
            self.acl.append(tuple(c.acl_groups))
            self.tags.append(tuple(c.tags))
            self.doc_rows.setdefault(c.document_id, []).append(row)
            self._post(self.acl_post, "acl", c.acl_groups, row)
            self._post(self.tag_post, "tag", c.tags, row)
        self.n += len(chunks)
        return rows

    def _post(self, post: dict[str, list[int]], kind: str, values: Sequence[str], row: int) -> None:
        for v in set(values):
            post.setdefault(v, []).append(row)
            self._post_cache.pop((kind, v), None)

    def kill_document(self, document_id: str) -> list[int]:
        rows = self.doc_rows.pop(document_id, [])
        if rows:
            self.alive[rows] = False
        return rows

    # -- reads ----------------------------------------------------------------------------------------------------
    def _posting(self, post: dict[str, list[int]], kind: str, value: str) -> np.ndarray:
        arr = self._post_cache.get((kind, value))
        if arr is None:
            arr = self._post_cache[(kind, value)] = np.asarray(post.get(value, ()), dtype=np.int64)
        return arr

    def _any_of(self, post: dict[str, list[int]], kind: str, values: Sequence[str], base: np.ndarray) -> np.ndarray:
        for v in values:
            base[self._posting(post, kind, v)] = True
        return base

    def mask(self, flt: SearchFilter) -> np.ndarray:
        """Mask over rows ``[0, n)``: live rows the filter admits (the semantics of ``SearchFilter.admits``)."""
        n = self.n
        tcode = self.tenants.codes.get(flt.tenant_id)
        if tcode is None or n == 0:
            return np.zeros(n, dtype=bool)
        m = self.alive[:n] & (self.tenant[:n] == tcode)
        if flt.acl_groups is not None:
            m &= self._any_of(self.acl_post, "acl", flt.acl_groups, self.acl_public[:n].copy())
        if flt.doc_types:
            codes = [self.doc_types.codes[t] for t in flt.doc_types if t in self.doc_types.codes]
            m &= np.isin(self.doc_type[:n], codes)
        if flt.tags:
            m &= self._any_of(self.tag_post, "tag", flt.tags, np.zeros(n, dtype=bool))
        if flt.document_ids:
            dm = np.zeros(n, dtype=bool)
            for d in flt.document_ids:
                dm[self.doc_rows.get(d, [])] = True
            m &= dm
        if flt.created_from is not None or flt.created_to is not None:
            created = self.created[:n]
            m &= created != NO_TIME
            if flt.created_from is not None:
                m &= created >= epoch_micros(flt.created_from)
            if flt.created_to is not None:
                m &= created <= epoch_micros(flt.created_to)
        return m

    # -- persistence ----------------------------------------------------------------------------------------------
    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        n = self.n
        arrays = {
            name: getattr(self, name)[:n]
            for name in ("vectors", "alive", "tenant", "doc_type", "document", "created", "acl_public")
        }
        meta = {
            "dim": self.dim,
            "n": n,
            "chunk_ids": self.chunk_ids,
            "acl": self.acl,
            "tags": self.tags,
            "tenants": self.tenants.items,
            "doc_types": self.doc_types.items,
            "documents": self.documents.items,
        }
        return arrays, meta

    @classmethod
    def from_state(cls, arrays: dict[str, np.ndarray], meta: dict[str, Any]) -> RowTable:
        n = int(meta["n"])
        table = cls(int(meta["dim"]), capacity=max(n, 1024))
        for name, arr in arrays.items():
            getattr(table, name)[:n] = arr
        table.n = n
        table.chunk_ids = list(meta["chunk_ids"])
        table.acl = [tuple(a) for a in meta["acl"]]
        table.tags = [tuple(t) for t in meta["tags"]]
        table.tenants, table.doc_types = Vocab(meta["tenants"]), Vocab(meta["doc_types"])
        table.documents = Vocab(meta["documents"])
        for row in np.flatnonzero(table.alive[:n]).tolist():
            table.doc_rows.setdefault(table.documents.items[table.document[row]], []).append(row)
            table._post(table.acl_post, "acl", table.acl[row], row)
            table._post(table.tag_post, "tag", table.tags[row], row)
        return table
