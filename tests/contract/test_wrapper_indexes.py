"""The index contracts run against the index wrappers, as far as their semantics allow.

- ``ReconnectingIndex`` is a full keyword or vector index once connected: the whole :class:`IndexContract` runs
  through it over the embedded backends. While its server is down it must honour the protocols' error rule: every
  call raises ``AppError(INDEX_UNAVAILABLE)``, and once the server is back it serves what was written.
- The null indexes (a disabled retriever) hold nothing: they satisfy the protocol of their kind, accept every write,
  never raise on any query, and always answer ``[]`` and a count of 0.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.keyword import TantivyKeywordIndex
from retrieval.null import NullGraphIndex, NullIndex, NullKeywordIndex, NullVectorIndex, is_disabled
from retrieval.protocols import GraphIndex, KeywordIndex, VectorIndex
from retrieval.reconnecting import ReconnectingIndex
from retrieval.vector import EmbeddedVectorIndex
from tests.contract.index_contract import DIM, ODD_QUERIES, chunk, vector_for
from tests.contract.test_embedded_indexes import KeywordContract, VectorContract

pytestmark = pytest.mark.unit


# --- ReconnectingIndex, connected: the full contract ----------------------------------------------------------------


class TestReconnectingKeywordIndex(KeywordContract):
    def make_index(self, root: Path) -> ReconnectingIndex:
        idx = ReconnectingIndex(lambda: TantivyKeywordIndex(root), name="keyword", dim=0)
        assert idx.connected
        return idx

    def test_is_a_keyword_index(self, index: ReconnectingIndex) -> None:
        assert isinstance(index, KeywordIndex)


class TestReconnectingVectorIndex(VectorContract):
    def make_index(self, root: Path) -> ReconnectingIndex:
        idx = ReconnectingIndex(lambda: EmbeddedVectorIndex(root, DIM), name="vector", dim=DIM)
        assert idx.connected
        return idx

    def test_is_a_vector_index(self, index: ReconnectingIndex) -> None:
        assert isinstance(index, VectorIndex) and index.dim == DIM


# --- ReconnectingIndex, server down: the error rule -----------------------------------------------------------------


class Server:
    """Connects to a real embedded index once ``up`` (refused before, as a server that is down)."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make
        self.up = False
        self.attempts = 0

    def connect(self) -> Any:
        self.attempts += 1
        if not self.up:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, "connection refused")
        return self.make()


KINDS = {
    "keyword": (
        lambda root: TantivyKeywordIndex(root),
        lambda idx, doc, chunks: idx.upsert_document(doc, chunks),
        lambda idx, flt: idx.search("common", flt, 10),
    ),
    "vector": (
        lambda root: EmbeddedVectorIndex(root, DIM),
        lambda idx, doc, chunks: idx.upsert_document(doc, chunks, np.stack([vector_for(c.id) for c in chunks])),
        lambda idx, flt: idx.search(vector_for("q"), flt, 10),
    ),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_while_down_every_call_is_index_unavailable_then_it_serves(kind: str, tmp_path: Path) -> None:
    make, write, search = KINDS[kind]
    server = Server(lambda: make(tmp_path / kind))
    idx = ReconnectingIndex(server.connect, name=kind, dim=DIM, retry_s=0.0)
    assert not idx.connected
    chunks = [chunk("t1", "d1", i) for i in range(2)]
    calls: list[Callable[[], Any]] = [
        lambda: write(idx, "d1", chunks),
        lambda: search(idx, SearchFilter("t1")),
        lambda: idx.delete_document("d1"),
        lambda: idx.count(),
        lambda: idx.count("t1"),
    ]
    for call in calls:
        with pytest.raises(AppError) as err:
            call()
        assert err.value.code == ErrorCode.INDEX_UNAVAILABLE and "connection refused" in err.value.message
    idx.close()  # closing an index that never connected is a no-op
    server.up = True
    write(idx, "d1", chunks)
    assert idx.connected
    assert {h.chunk_id for h in search(idx, SearchFilter("t1"))} == {c.id for c in chunks}
    assert idx.count("t1") == 2 and idx.count("t2") == 0
    idx.delete_document("d1")
    assert idx.count() == 0
    idx.close()


# --- the null indexes -----------------------------------------------------------------------------------------------

NULLS: dict[str, tuple[Callable[[], NullIndex], type, Callable[[Any, str, Sequence[ChunkRecord]], None], Any]] = {
    "keyword": (NullKeywordIndex, KeywordIndex, lambda i, d, c: i.upsert_document(d, c), lambda t: t),
    "vector": (
        lambda: NullVectorIndex(DIM),
        VectorIndex,
        lambda i, d, c: i.upsert_document(d, c, np.stack([vector_for(x.id) for x in c])),
        vector_for,
    ),
    "graph": (
        NullGraphIndex,
        GraphIndex,
        lambda i, d, c: i.upsert_document(d, c, [["kestrel"] for _ in c]),
        lambda t: t,
    ),
}


@pytest.fixture(params=sorted(NULLS))
def null(request: pytest.FixtureRequest) -> tuple[Any, type, Any, Any]:
    make, protocol, write, query = NULLS[request.param]
    idx = make()
    yield idx, protocol, write, query
    idx.close()


def test_a_null_index_satisfies_its_protocol_and_is_disabled(null: tuple[Any, type, Any, Any]) -> None:
    idx, protocol, _, _ = null
    assert isinstance(idx, protocol) and is_disabled(idx) and idx.name.endswith("-disabled")


def test_a_null_index_accepts_writes_and_holds_nothing(null: tuple[Any, type, Any, Any]) -> None:
    idx, _, write, query = null
    write(idx, "d1", [chunk("t1", "d1", i) for i in range(3)])
    write(idx, "d1", [chunk("t1", "d1", 0, version=2)])
    assert idx.search(query("common"), SearchFilter("t1"), 10) == []
    assert idx.count() == 0 and idx.count("t1") == 0
    idx.delete_document("d1")
    idx.delete_document("no-such-document")
    assert idx.count() == 0


@pytest.mark.parametrize("text", ODD_QUERIES, ids=range(len(ODD_QUERIES)))
def test_a_null_index_never_raises_on_odd_queries(null: tuple[Any, type, Any, Any], text: str) -> None:
    idx, _, _, query = null
    hits: list[Hit] = idx.search(query(text), SearchFilter("t1", acl_groups=("eng",), tags=("x",)), 5)
    assert hits == []


def test_closing_a_null_index_twice_is_harmless(null: tuple[Any, type, Any, Any]) -> None:
    idx, _, _, _ = null
    idx.close()
    idx.close()
    assert idx.count() == 0
