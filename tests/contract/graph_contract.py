"""The contract every :class:`~retrieval.protocols.GraphIndex` backend must pass (one suite, subclassed per backend).

It is the shared index contract (writes, versions, deletes, filters, tenants, odd input, concurrent readers) with
entities derived from the chunk text (every chunk mentions the entity "common", so a search for it reaches every
admitted chunk), plus what only a graph has: linking, multi-hop ranking, and deletes that take the document's edges
and orphaned entities with them. A backend module implements ``make_index`` and may override ``leftovers``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pytest

from core.errors import AppError
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.protocols import GraphIndex
from tests.contract.index_contract import IndexContract, chunk


def entities_of(c: ChunkRecord) -> list[str]:
    """Entity names of a contract chunk: "common" plus its other words (``word3``, ``version2``, document id)."""
    return ["common"] + [w for w in c.text.split() if w not in ("common", "of")]


class GraphContract(IndexContract):
    def write(self, index: Any, document_id: str, chunks: Sequence[ChunkRecord]) -> None:
        index.upsert_document(document_id, chunks, [entities_of(c) for c in chunks])

    def search_all(self, index: Any, flt: SearchFilter, k: int = 100) -> list[Hit]:
        return index.search("common", flt, k)  # type: ignore[no-any-return]

    def search_text(self, index: Any, text: str, flt: SearchFilter) -> list[Hit]:
        return index.search(text, flt, 10)  # type: ignore[no-any-return]

    def leftovers(self, index: Any, tenant_id: str) -> int:
        """Nodes and edges of ``tenant_id`` still stored (the embedded graph's, or the database rows)."""
        raise NotImplementedError

    def put(
        self,
        index: Any,
        doc: str,
        entities: Sequence[Sequence[str]],
        *,
        tenant: str = "t1",
        section_path: tuple[str, ...] = (),
        **kw: Any,
    ) -> list[str]:
        """Upsert a document of ``len(entities)`` chunks mentioning the given names; returns the chunk ids."""
        chunks = [
            dataclasses.replace(chunk(tenant, doc, i, text=f"chunk {i} of {doc}", **kw), section_path=section_path)
            for i in range(len(entities))
        ]
        index.upsert_document(doc, chunks, entities)
        return [c.id for c in chunks]

    # -- graph-specific ------------------------------------------------------------------------------------------
    def test_is_a_graph_index(self, index: Any) -> None:
        assert isinstance(index, GraphIndex)

    def test_mismatched_entities_rejected(self, index: Any) -> None:
        with pytest.raises(AppError):
            index.upsert_document("d1", [chunk("t1", "d1", 0)], [])
        with pytest.raises(AppError):
            index.upsert_document("d1", [chunk("t1", "d1", 0), chunk("t2", "d1", 1)], [["a"], ["b"]])

    def test_delete_removes_edges_and_orphan_entities(self, index: Any) -> None:
        (a,) = self.put(index, "d1", [["Alice", "Bob"]], section_path=("Intro", "Scope"))
        (b,) = self.put(index, "d2", [["Bob", "Carol"]])
        assert index.link("Alice", "t1") == {"alice": 1.0}
        index.delete_document("d1")
        assert index.link("Alice", "t1") == {}  # the entity only d1 mentioned is gone ...
        assert index.link("Bob", "t1") == {"bob": 1.0}  # ... the shared one stays
        assert [h.chunk_id for h in index.search("Bob", SearchFilter("t1"), 10)] == [b]
        assert index.search("Alice", SearchFilter("t1"), 10) == []
        index.delete_document("d2")
        assert index.count("t1") == 0
        assert self.leftovers(index, "t1") == 0, "a deleted document left nodes or edges behind"

    def test_new_version_drops_entities_no_longer_mentioned(self, index: Any) -> None:
        self.put(index, "d1", [["Alice"], ["Bob"]])
        (c,) = self.put(index, "d1", [["Carol"]])
        assert index.link("Alice Bob", "t1") == {}
        assert [h.chunk_id for h in index.search("Carol", SearchFilter("t1"), 10)] == [c]
        assert index.count("t1") == 1

    def test_tenant_entities_are_separate(self, index: Any) -> None:
        (a,) = self.put(index, "a", [["Project Falcon", "Alice"]], tenant="t1")
        (b,) = self.put(index, "b", [["Alice", "Secret Merger"]], tenant="t2")
        assert index.search("Secret Merger", SearchFilter("t1"), 10) == []
        assert [h.chunk_id for h in index.search("what does Alice work on", SearchFilter("t1"), 10)] == [a]
        assert [h.chunk_id for h in index.search("what does Alice work on", SearchFilter("t2"), 10)] == [b]
        index.delete_document("b")  # deleting in one tenant leaves the other tenant's entity of the same name
        assert index.link("Alice", "t1") == {"alice": 1.0} and index.link("Alice", "t2") == {}
        assert self.leftovers(index, "t2") == 0

    def test_document_moving_tenant_leaves_nothing_behind(self, index: Any) -> None:
        self.put(index, "d1", [["Alice"]], tenant="t1")
        (moved,) = self.put(index, "d1", [["Alice"]], tenant="t2")
        assert index.search("Alice", SearchFilter("t1"), 10) == []
        assert [h.chunk_id for h in index.search("Alice", SearchFilter("t2"), 10)] == [moved]
        assert self.leftovers(index, "t1") == 0

    def test_acl_hidden_chunk_does_not_carry_rank(self, index: Any) -> None:
        (hidden,) = self.put(index, "d1", [["Alice", "Bob"]], acl=("hr",))
        (other,) = self.put(index, "d2", [["Bob"]])
        assert index.search("Alice", SearchFilter("t1", acl_groups=("eng",)), 10) == []
        hits = index.search("Alice", SearchFilter("t1", acl_groups=("hr",)), 10)
        assert [h.chunk_id for h in hits] == [hidden, other]

    def test_multi_hop_reaches_chunk_naming_only_the_bridge_entity(self, index: Any) -> None:
        (bridge,) = self.put(index, "bridge", [["Ada Lovelace", "Analytical Engine"]])
        (target,) = self.put(index, "target", [["Analytical Engine", "Charles Babbage"]])
        (noise,) = self.put(index, "noise", [["Difference Engine"]])
        hits = index.search("Who designed the machine Ada Lovelace wrote about?", SearchFilter("t1"), 10)
        ids = [h.chunk_id for h in hits]
        assert ids[:2] == [bridge, target]
        assert noise not in ids
        assert hits[0].score > hits[1].score > 0

    def test_specific_seed_outranks_common_one(self, index: Any) -> None:
        for i in range(6):
            self.put(index, f"g{i}", [["Company"]])
        (rare,) = self.put(index, "rare", [["Zorblax"]])
        assert index.search("Company Zorblax", SearchFilter("t1"), 3)[0].chunk_id == rare

    def test_no_link_returns_empty_and_partial_match_links(self, index: Any) -> None:
        (c,) = self.put(index, "d1", [["Kestrel Devices"]])
        assert index.search("weather tomorrow", SearchFilter("t1"), 5) == []
        assert index.search("anything", SearchFilter("t1"), 0) == []
        assert index.link("tell me about Kestrel", "t1") == {"kestrel device": 0.25}
        assert index.link("tell me about Kestral", "t1") == {"kestrel device": 0.25}  # typo corrected
        assert index.link("tell me about Kestral", "nobody") == {}
        assert [h.chunk_id for h in index.search("tell me about Kestrel", SearchFilter("t1"), 5)] == [c]

    def test_hub_seed_is_bounded_and_ranks_the_specific_chunks(self, index: Any) -> None:
        """A seed mentioned by more chunks than ``max_seed_fanout`` is not expanded when a specific seed exists."""
        hub = [["Hub Topic"] for _ in range(40)]
        self.put(index, "many", hub)
        (special,) = self.put(index, "special", [["Hub Topic", "Rare Gem"]])
        index.ppr = type(index.ppr)(max_seed_fanout=10)
        hits = index.search("Hub Topic Rare Gem", SearchFilter("t1"), 50)
        assert hits[0].chunk_id == special
        assert len(hits) == 1  # the hub only joins chunks the specific seed reached
