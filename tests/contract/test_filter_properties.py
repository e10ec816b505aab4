"""Property test: random documents across tenants and ACL groups, random filters and queries: an embedded index
returns nothing the filter does not admit (``SearchFilter.admits`` is the reference), and a match-all search returns
everything it admits."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.types import ChunkRecord, SearchFilter
from retrieval.keyword import TantivyKeywordIndex
from retrieval.vector import EmbeddedVectorIndex
from tests.contract.index_contract import DIM, vector_for

pytestmark = pytest.mark.unit

TENANTS = ("t1", "t2", "t3")
GROUPS = ("g1", "g2", "g3", "g4")
TYPES = ("faq", "manual", "")
TAGS = ("hr", "pay", "it")
BASE = dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc)
times = st.one_of(st.none(), st.integers(0, 5).map(lambda d: BASE + dt.timedelta(days=d, microseconds=d)))
small_sets = lambda pool: st.lists(st.sampled_from(pool), max_size=2, unique=True).map(tuple)  # noqa: E731


@st.composite
def documents(draw: st.DrawFn) -> list[ChunkRecord]:
    out = []
    for d in range(draw(st.integers(1, 8))):
        tenant, acl, doc_type = draw(st.sampled_from(TENANTS)), draw(small_sets(GROUPS)), draw(st.sampled_from(TYPES))
        tags, created = draw(small_sets(TAGS)), draw(times)
        for i in range(draw(st.integers(1, 3))):
            words = draw(st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), min_size=1, max_size=3))
            text = "common " + " ".join(words)
            out.append(
                ChunkRecord(
                    id=ChunkRecord.make_id(tenant, f"doc{d}", 1, i, text),
                    tenant_id=tenant,
                    document_id=f"doc{d}",
                    document_version=1,
                    title="",
                    text=text,
                    order=i,
                    acl_groups=acl,
                    doc_type=doc_type,
                    tags=tags,
                    created_at=created,
                )
            )
    return out


filters = st.builds(
    SearchFilter,
    tenant_id=st.sampled_from(TENANTS),
    acl_groups=st.one_of(st.none(), small_sets(GROUPS)),
    doc_types=small_sets(TYPES),
    tags=small_sets(TAGS),
    created_from=times,
    created_to=times,
    document_ids=small_sets([f"doc{i}" for i in range(8)]),
)
queries = st.one_of(st.sampled_from(["common", "alpha", "beta gamma", "delta"]), st.text(max_size=30))
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _load(index: object, chunks: list[ChunkRecord], vectors: bool) -> None:
    for doc in dict.fromkeys(c.document_id for c in chunks):
        mine = [c for c in chunks if c.document_id == doc]
        if vectors:
            index.upsert_document(doc, mine, np.stack([vector_for(c.id) for c in mine]))  # type: ignore[attr-defined]
        else:
            index.upsert_document(doc, mine)  # type: ignore[attr-defined]


@SETTINGS
@given(chunks=documents(), flt=filters, query=queries)
def test_keyword_index_never_returns_unadmitted(chunks: list[ChunkRecord], flt: SearchFilter, query: str) -> None:
    by_id = {c.id: c for c in chunks}
    with tempfile.TemporaryDirectory() as tmp:
        index = TantivyKeywordIndex(Path(tmp))
        _load(index, chunks, vectors=False)
        hits = index.search(query, flt, 50)
        assert all(flt.admits(by_id[h.chunk_id]) for h in hits)
        everything = {h.chunk_id for h in index.search("common", flt, 50)}
        assert everything == {c.id for c in chunks if flt.admits(c)}
        index.close()


@SETTINGS
@given(chunks=documents(), flt=filters, query=st.text(max_size=10), exact_max=st.sampled_from([0, 8192]))
def test_vector_index_never_returns_unadmitted(
    chunks: list[ChunkRecord], flt: SearchFilter, query: str, exact_max: int
) -> None:
    by_id = {c.id: c for c in chunks}
    with tempfile.TemporaryDirectory() as tmp:
        index = EmbeddedVectorIndex(Path(tmp), DIM, exact_max_rows=exact_max)
        _load(index, chunks, vectors=True)
        hits = index.search(vector_for(query), flt, 3)
        assert all(flt.admits(by_id[h.chunk_id]) for h in hits)
        everything = {h.chunk_id for h in index.search(vector_for(query), flt, 50)}
        assert everything == {c.id for c in chunks if flt.admits(c)}
        index.close()
