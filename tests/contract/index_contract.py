"""The contract every keyword and vector index backend must pass (one suite, subclassed per backend).

A backend's test module subclasses :class:`IndexContract` and implements ``make_index``, ``write`` and ``search_all``
(a search meant to match every admitted chunk), plus ``search_text`` for odd user input. Chunks all contain the word
"common" and each has a deterministic random vector, so the same suite drives BM25 and dense backends.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.types import ChunkRecord, Hit, SearchFilter

DIM = 16
UTC = dt.timezone.utc
ODD_QUERIES = [
    "",
    "   ",
    "the and of",
    '"unbalanced',
    "AND OR NOT",
    "title:common",
    "a*?~^2",
    "((",
    ")",
    "[1 TO 2]",
    "\x00\x01",
    "common\ttab\nnewline",
    "東京 タワー",
    "emoji 🙂 common",
    "-common",
    "+common",
    "common~2",
    "x" * 500,
    "\\",
    "'; DROP TABLE chunks; --",
    "\u202e\u200b",
    "common" * 100,
]


def vector_for(chunk_id: str, dim: int = DIM) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(chunk_id.encode()).digest()[:8], "little")
    v = np.random.default_rng(seed).standard_normal(dim).astype(np.float32)
    return v / np.linalg.norm(v)


def chunk(
    tenant: str,
    document_id: str,
    order: int,
    *,
    version: int = 1,
    text: str | None = None,
    acl: tuple[str, ...] = (),
    doc_type: str = "",
    tags: tuple[str, ...] = (),
    created_at: dt.datetime | None = None,
    title: str = "Title",
) -> ChunkRecord:
    body = text if text is not None else f"common word{order} version{version} of {document_id}"
    return ChunkRecord(
        id=ChunkRecord.make_id(tenant, document_id, version, order, body),
        tenant_id=tenant,
        document_id=document_id,
        document_version=version,
        title=title,
        text=body,
        order=order,
        acl_groups=acl,
        doc_type=doc_type,
        tags=tags,
        created_at=created_at,
    )


class IndexContract:
    """Subclass as ``TestXxx(IndexContract)`` and implement the four hooks below."""

    def make_index(self, root: Path) -> Any:
        raise NotImplementedError

    def write(self, index: Any, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        raise NotImplementedError

    def search_all(self, index: Any, flt: SearchFilter, k: int = 100) -> list[Hit]:
        raise NotImplementedError

    def search_text(self, index: Any, text: str, flt: SearchFilter) -> list[Hit]:
        raise NotImplementedError

    @pytest.fixture
    def index(self, tmp_path: Path) -> Any:
        idx = self.make_index(tmp_path / "index")
        yield idx
        idx.close()

    def ids(self, index: Any, flt: SearchFilter, k: int = 100) -> set[str]:
        hits = self.search_all(index, flt, k)
        assert len(hits) == len({h.chunk_id for h in hits}), "duplicate chunk ids in one result list"
        return {h.chunk_id for h in hits}

    # -- writes ---------------------------------------------------------------------------------------------------
    def test_upsert_then_search(self, index: Any) -> None:
        chunks = [chunk("t1", "d1", i) for i in range(3)]
        self.write(index, "d1", chunks)
        assert self.ids(index, SearchFilter("t1")) == {c.id for c in chunks}
        assert index.count("t1") == 3
        assert index.count() == 3

    def test_new_version_replaces_all_chunks(self, index: Any) -> None:
        old = [chunk("t1", "d1", i, version=1) for i in range(4)]
        new = [chunk("t1", "d1", i, version=2) for i in range(2)]
        self.write(index, "d1", old)
        self.write(index, "d1", new)
        assert self.ids(index, SearchFilter("t1")) == {c.id for c in new}
        assert index.count("t1") == 2

    def test_upsert_is_idempotent(self, index: Any) -> None:
        chunks = [chunk("t1", "d1", i) for i in range(3)]
        self.write(index, "d1", chunks)
        self.write(index, "d1", chunks)
        assert len(self.search_all(index, SearchFilter("t1"))) == 3
        assert index.count() == 3

    def test_delete_document(self, index: Any) -> None:
        self.write(index, "d1", [chunk("t1", "d1", i) for i in range(3)])
        keep = [chunk("t1", "d2", 0)]
        self.write(index, "d2", keep)
        index.delete_document("d1")
        assert self.ids(index, SearchFilter("t1")) == {keep[0].id}
        assert index.count("t1") == 1

    def test_delete_unknown_is_noop(self, index: Any) -> None:
        self.write(index, "d1", [chunk("t1", "d1", 0)])
        index.delete_document("no-such-document")
        assert index.count() == 1

    def test_reopen_keeps_data(self, tmp_path: Path) -> None:
        idx = self.make_index(tmp_path / "reopen")
        chunks = [chunk("t1", "d1", i) for i in range(3)]
        self.write(idx, "d1", chunks)
        self.write(idx, "d2", [chunk("t1", "d2", 0)])
        idx.delete_document("d2")
        idx.close()
        again = self.make_index(tmp_path / "reopen")
        try:
            assert self.ids(again, SearchFilter("t1")) == {c.id for c in chunks}
        finally:
            again.close()

    # -- filters --------------------------------------------------------------------------------------------------
    @pytest.fixture
    def corpus(self, index: Any) -> list[ChunkRecord]:
        day = dt.datetime(2024, 1, 1, tzinfo=UTC)
        rows = [
            chunk("t1", "pub", 0, doc_type="faq", tags=("hr",), created_at=day),
            chunk("t1", "pub", 1, doc_type="faq", tags=("hr", "pay"), created_at=day),
            chunk(
                "t1",
                "sales",
                0,
                acl=("sales",),
                doc_type="manual",
                tags=("pay",),
                created_at=day + dt.timedelta(days=10),
            ),
            chunk("t1", "eng", 0, acl=("eng", "ops"), doc_type="manual", created_at=day + dt.timedelta(days=20)),
            chunk("t1", "undated", 0, acl=("eng",), doc_type="policy", tags=("legal",)),
            chunk("t2", "other", 0, doc_type="faq", tags=("hr",), created_at=day),
        ]
        for doc in dict.fromkeys(r.document_id for r in rows):
            self.write(index, doc, [r for r in rows if r.document_id == doc])
        return rows

    @pytest.mark.parametrize(
        "flt",
        [
            SearchFilter("t1"),
            SearchFilter("t2"),
            SearchFilter("nobody"),
            SearchFilter("t1", acl_groups=()),
            SearchFilter("t1", acl_groups=("eng",)),
            SearchFilter("t1", acl_groups=("sales", "ops")),
            SearchFilter("t1", acl_groups=("unknown-group",)),
            SearchFilter("t1", doc_types=("manual",)),
            SearchFilter("t1", doc_types=("manual", "policy")),
            SearchFilter("t1", tags=("pay",)),
            SearchFilter("t1", tags=("legal", "hr")),
            SearchFilter("t1", document_ids=("eng", "pub")),
            SearchFilter("t1", created_from=dt.datetime(2024, 1, 5, tzinfo=UTC)),
            SearchFilter("t1", created_to=dt.datetime(2024, 1, 11, tzinfo=UTC)),
            SearchFilter(
                "t1", created_from=dt.datetime(2024, 1, 11, tzinfo=UTC), created_to=dt.datetime(2024, 1, 1, tzinfo=UTC)
            ),
            SearchFilter(
                "t1", created_from=dt.datetime(2024, 1, 11, tzinfo=UTC), created_to=dt.datetime(2024, 1, 11, tzinfo=UTC)
            ),
            SearchFilter(
                "t1", created_from=dt.datetime(2024, 1, 1, tzinfo=UTC), created_to=dt.datetime(2024, 1, 1, tzinfo=UTC)
            ),
            SearchFilter("t1", acl_groups=("eng",), doc_types=("manual", "policy"), tags=("legal",)),
        ],
        ids=lambda f: repr(f)[13:80],
    )
    def test_filter_admits_exactly(self, index: Any, corpus: list[ChunkRecord], flt: SearchFilter) -> None:
        assert self.ids(index, flt) == {c.id for c in corpus if flt.admits(c)}

    def test_tenant_isolation(self, index: Any) -> None:
        a = [chunk("tenant-a", "shared-name", 0, text="common identical text")]
        b = [chunk("tenant-b", "other-doc", 0, text="common identical text")]
        self.write(index, "shared-name", a)
        self.write(index, "other-doc", b)
        assert self.ids(index, SearchFilter("tenant-a")) == {a[0].id}
        assert self.ids(index, SearchFilter("tenant-b")) == {b[0].id}
        assert index.count("tenant-a") == 1
        assert index.count("tenant-c") == 0

    # -- odd input ------------------------------------------------------------------------------------------------
    @pytest.mark.parametrize("text", ODD_QUERIES, ids=range(len(ODD_QUERIES)))
    def test_odd_query_text_never_raises(self, index: Any, text: str) -> None:
        self.write(index, "d1", [chunk("t1", "d1", 0)])
        hits = self.search_text(index, text, SearchFilter("t1"))
        assert all(isinstance(h, Hit) for h in hits)

    def test_search_empty_index(self, index: Any) -> None:
        assert self.search_all(index, SearchFilter("t1")) == []
        assert index.count() == 0

    # -- concurrency ----------------------------------------------------------------------------------------------
    def test_concurrent_readers_see_old_or_new_set(self, index: Any) -> None:
        sets = [[chunk("t1", "d1", i, version=v) for i in range(6 if v == 1 else 3)] for v in (1, 2)]
        expected = [{c.id for c in s} for s in sets]
        self.write(index, "d1", sets[0])
        seen: list[set[str]] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def reader() -> None:
            try:
                while not stop.is_set():
                    seen.append(self.ids(index, SearchFilter("t1")))
            except BaseException as exc:  # surfaced below
                errors.append(exc)

        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for i in range(20):
            self.write(index, "d1", sets[(i + 1) % 2])
        stop.set()
        for t in threads:
            t.join()
        assert not errors, errors
        assert seen, "readers never ran"
        bad = [s for s in seen if s not in expected]
        assert not bad, f"a reader saw a mix of versions: {bad[:3]}"
