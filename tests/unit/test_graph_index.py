"""NetworkXGraphIndex on small synthetic graphs: structure, incremental edits, filters, persistence, multi-hop."""

from __future__ import annotations

import datetime as dt
import tempfile
from collections import Counter
from itertools import combinations
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import AppError
from core.types import ChunkRecord, SearchFilter
from retrieval.graph import NetworkXGraphIndex, normalize_entity, query_ngrams
from retrieval.graph.persist import JOURNAL, tenant_dir
from retrieval.graph.store import CHUNK, ENTITY, ChunkMeta, TenantGraph
from retrieval.protocols import GraphIndex

pytestmark = pytest.mark.unit

T0 = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


def chunk(doc: str, order: int, *, tenant: str = "t1", **kw: object) -> ChunkRecord:
    return ChunkRecord(
        id=f"{tenant}-{doc}-{order}",
        tenant_id=tenant,
        document_id=doc,
        document_version=1,
        title="T",
        text=f"text {order}",
        order=order,
        **kw,  # type: ignore[arg-type]
    )


@pytest.fixture
def index(tmp_path: Path) -> NetworkXGraphIndex:
    return NetworkXGraphIndex(tmp_path / "graph")


def tenant_graph(index: NetworkXGraphIndex, tenant: str = "t1") -> TenantGraph:
    return index._tenants[tenant].graph


def cooc_weights(tg: TenantGraph) -> dict[frozenset[str], int]:
    assert not any(a.startswith(ENTITY) and b.startswith(ENTITY) for a, b in tg.graph.edges)
    return {frozenset((a, b)): d["weight"] for a, b, d in tg.cooc.edges(data=True)}


# --------------------------------------------------------------------------------------------- normalisation
def test_normalize_entity_examples() -> None:
    assert normalize_entity("The Dark Knight") == "dark knight"
    assert normalize_entity("U.S. Army") == "us army"
    assert normalize_entity("Nolan's films") == "nolan film"
    assert normalize_entity("Café  ZÜRICH") == "cafe zurich"
    assert normalize_entity("Bank of America") == "bank of america"
    assert normalize_entity("the") == ""
    assert normalize_entity("one two three four five six seven") == ""


words = st.text(alphabet="abcdefgsíÉ'. -", min_size=1, max_size=12)


@given(st.lists(words, min_size=1, max_size=5))
def test_normalize_is_idempotent_and_found_among_query_ngrams(parts: list[str]) -> None:
    name = " ".join(parts)
    key = normalize_entity(name)
    assert normalize_entity(key) == key
    if key:
        assert key in query_ngrams(f"what about {name} today?")


# --------------------------------------------------------------------------------------------- structure
def test_is_a_graph_index(index: NetworkXGraphIndex) -> None:
    assert isinstance(index, GraphIndex)


def test_structure_mentions_and_cooccurrence(index: NetworkXGraphIndex) -> None:
    chunks = [chunk("d1", 0, section_path=("Intro", "Scope")), chunk("d1", 1), chunk("d1", 2)]
    index.upsert_document("d1", chunks, [["Alice", "Acme Corp"], ["Acme Corp", "alice", "Bob"], []])
    g = tenant_graph(index).graph
    assert g.has_edge("d:d1", "s:d1/Intro") and g.has_edge("s:d1/Intro", "s:d1/Intro\x1fScope")
    assert g.has_edge("s:d1/Intro\x1fScope", CHUNK + chunks[0].id) and g.has_edge("d:d1", CHUNK + chunks[1].id)
    assert g.has_edge(CHUNK + chunks[1].id, "e:alice")  # "alice" and "Alice" are one entity
    assert cooc_weights(tenant_graph(index)) == {
        frozenset(("e:alice", "e:acme corp")): 2,
        frozenset(("e:alice", "e:bob")): 1,
        frozenset(("e:acme corp", "e:bob")): 1,
    }
    assert index.count("t1") == 3 and index.count() == 3 and index.count("other") == 0


def test_delete_leaves_no_orphans(index: NetworkXGraphIndex) -> None:
    index.upsert_document("d1", [chunk("d1", 0, section_path=("A",))], [["Alice", "Bob"]])
    index.upsert_document("d2", [chunk("d2", 0)], [["Bob", "Carol"]])
    index.delete_document("d1")
    tg = tenant_graph(index)
    assert set(tg.graph.nodes) == {"d:d2", CHUNK + chunk("d2", 0).id, "e:bob", "e:carol"}
    assert cooc_weights(tg) == {frozenset(("e:bob", "e:carol")): 1}
    assert set(tg.token_index) == {"bob", "carol"}
    index.delete_document("d2")
    index.delete_document("unknown")  # no-op
    assert tg.graph.number_of_nodes() == 0 and tg.token_index == {} and tg.docs == {}
    assert tg.cooc.number_of_nodes() == 0 and tg.mentions == {}


def test_upsert_replaces_previous_version(index: NetworkXGraphIndex) -> None:
    index.upsert_document("d1", [chunk("d1", 0), chunk("d1", 1)], [["Alice"], ["Bob"]])
    index.upsert_document("d1", [chunk("d1", 5)], [["Carol"]])
    index.upsert_document("d1", [chunk("d1", 5)], [["Carol"]])
    tg = tenant_graph(index)
    assert set(tg.graph.nodes) == {"d:d1", CHUNK + chunk("d1", 5).id, "e:carol"}
    assert index.count("t1") == 1


def test_mismatched_entities_rejected(index: NetworkXGraphIndex) -> None:
    with pytest.raises(AppError):
        index.upsert_document("d1", [chunk("d1", 0)], [])


ENTITY_POOL = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
doc_ops = st.lists(
    st.tuples(
        st.sampled_from(["d1", "d2", "d3", "d4"]),
        st.lists(st.lists(st.sampled_from(ENTITY_POOL), max_size=5), max_size=4),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=40, deadline=None)
@given(doc_ops)
def test_incremental_edits_equal_a_rebuild(ops: list[tuple[str, list[list[str]]]]) -> None:
    """Any sequence of upserts and deletes (an empty chunk list deletes) gives the graph a rebuild would give."""
    live = TenantGraph("t1", max_cooc_entities=3)
    final: dict[str, list[list[str]]] = {}
    for doc, ents in ops:
        live.upsert_document(doc, [chunk(doc, i) for i in range(len(ents))], ents)
        if ents:
            final[doc] = ents
        else:
            final.pop(doc, None)
    rebuilt = TenantGraph("t1", max_cooc_entities=3)
    for doc, ents in final.items():
        rebuilt.upsert_document(doc, [chunk(doc, i) for i in range(len(ents))], ents)
    assert set(live.graph.nodes) == set(rebuilt.graph.nodes)
    assert {frozenset(e) for e in live.graph.edges} == {frozenset(e) for e in rebuilt.graph.edges}
    assert cooc_weights(live) == cooc_weights(rebuilt)
    assert live.mentions == rebuilt.mentions and set(live.cooc.nodes) == set(rebuilt.cooc.nodes)
    assert set(live.cooc.nodes) <= set(live.graph.nodes)
    assert all(w > 0 for w in cooc_weights(live).values())
    assert {k: v for k, v in live.token_index.items()} == rebuilt.token_index
    expected: Counter[frozenset[str]] = Counter()
    for ents in final.values():
        for names in ents:
            keys = list(dict.fromkeys(names))[:3]
            expected.update(frozenset((ENTITY + a, ENTITY + b)) for a, b in combinations(keys, 2))
    assert cooc_weights(live) == dict(expected)


# ------------------------------------------------------------------------------------------------ filters
chunk_specs = st.lists(
    st.tuples(
        st.sampled_from(["t1", "t2"]),
        st.lists(st.sampled_from(["g1", "g2", "g3"]), max_size=2, unique=True),
        st.sampled_from(["pdf", "faq", ""]),
        st.lists(st.sampled_from(["x", "y"]), max_size=2, unique=True),
        st.one_of(st.none(), st.integers(0, 10)),
        st.lists(st.sampled_from(["Alice", "Bob", "Carol", "Dave"]), min_size=1, max_size=3),
    ),
    min_size=1,
    max_size=14,
)


def rarely(strategy: st.SearchStrategy[object], empty: object) -> st.SearchStrategy[object]:
    """``empty`` three times out of four, so that the filters combined still admit something."""
    return st.one_of(st.just(empty), st.just(empty), st.just(empty), strategy)


filters = st.builds(
    SearchFilter,
    tenant_id=st.sampled_from(["t1", "t1", "t2", "t3"]),
    acl_groups=st.one_of(st.none(), st.lists(st.sampled_from(["g1", "g2", "g3"]), max_size=1).map(tuple)),
    doc_types=rarely(st.lists(st.sampled_from(["pdf", "faq", ""]), max_size=2).map(tuple), ()),
    tags=rarely(st.lists(st.sampled_from(["x", "y"]), max_size=1).map(tuple), ()),
    created_from=rarely(st.integers(0, 10).map(lambda d: T0 + dt.timedelta(days=d)), None),
    created_to=rarely(st.integers(0, 10).map(lambda d: T0 + dt.timedelta(days=d)), None),
    document_ids=rarely(st.lists(st.sampled_from(["d0", "d1", "d2"]), max_size=2).map(tuple), ()),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk_specs, filters, st.sampled_from(["Alice", "what did Bob and Carol say", "dave? alice?"]))
def test_search_never_leaks(specs: list[tuple], flt: SearchFilter, query: str) -> None:  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as tmp:
        index = NetworkXGraphIndex(Path(tmp))
        by_id: dict[str, ChunkRecord] = {}
        docs: dict[str, list[tuple[ChunkRecord, list[str]]]] = {}
        for i, (tenant, acl, doc_type, tags, day, ents) in enumerate(specs):
            doc = f"d{i % 3}-{tenant}" if i % 2 else f"d{i % 3}"
            c = ChunkRecord(
                id=f"c{i}",
                tenant_id=tenant,
                document_id=doc,
                document_version=1,
                title="",
                text="",
                acl_groups=tuple(acl),
                doc_type=doc_type,
                tags=tuple(tags),
                order=i,
                created_at=None if day is None else T0 + dt.timedelta(days=day),
            )
            if index._doc_tenant.get(doc, tenant) != tenant:
                continue
            docs.setdefault(doc, []).append((c, ents))
            index.upsert_document(doc, [x for x, _ in docs[doc]], [e for _, e in docs[doc]])
            by_id[c.id] = c
        hits = index.search(query, flt, 50)
        assert all(flt.admits(by_id[h.chunk_id]) for h in hits)
        if flt.tenant_id == "t3":
            assert hits == []


@settings(max_examples=300, deadline=None)
@given(chunk_specs, filters)
def test_stored_filter_fields_admit_exactly_like_search_filter(specs: list[tuple], flt: SearchFilter) -> None:  # type: ignore[type-arg]
    for i, (tenant, acl, doc_type, tags, day, _) in enumerate(specs):
        c = ChunkRecord(
            id=f"c{i}",
            tenant_id=tenant,
            document_id=f"d{i % 3}",
            document_version=1,
            title="",
            text="",
            acl_groups=tuple(acl),
            doc_type=doc_type,
            tags=tuple(tags),
            created_at=None if day is None else T0 + dt.timedelta(days=day),
        )
        assert flt.admits(ChunkMeta.of(c)) == flt.admits(c)


def test_tenant_entities_are_separate(index: NetworkXGraphIndex) -> None:
    index.upsert_document("a", [chunk("a", 0, tenant="t1")], [["Project Falcon", "Alice"]])
    index.upsert_document("b", [chunk("b", 0, tenant="t2")], [["Alice", "Secret Merger"]])
    assert index.search("Secret Merger", SearchFilter("t1"), 10) == []
    hits = index.search("what does Alice work on", SearchFilter("t1"), 10)
    assert [h.chunk_id for h in hits] == [chunk("a", 0, tenant="t1").id]
    assert "e:secret merger" not in tenant_graph(index, "t1").graph


def test_acl_hidden_chunk_does_not_carry_rank(index: NetworkXGraphIndex) -> None:
    """A chunk the caller cannot see is not a bridge: the multi-hop target stays unreachable through it."""
    index.upsert_document("d1", [chunk("d1", 0, acl_groups=("hr",))], [["Alice", "Bob"]])
    index.upsert_document("d2", [chunk("d2", 0)], [["Bob"]])
    assert index.search("Alice", SearchFilter("t1", acl_groups=("eng",)), 10) == []
    hits = index.search("Alice", SearchFilter("t1", acl_groups=("hr",)), 10)
    assert [h.chunk_id for h in hits] == [chunk("d1", 0).id, chunk("d2", 0).id]


# ----------------------------------------------------------------------------------------------- search
def test_multi_hop_reaches_chunk_naming_only_the_bridge_entity(index: NetworkXGraphIndex) -> None:
    index.upsert_document("bridge", [chunk("bridge", 0)], [["Ada Lovelace", "Analytical Engine"]])
    index.upsert_document("target", [chunk("target", 0)], [["Analytical Engine", "Charles Babbage"]])
    index.upsert_document("noise", [chunk("noise", 0)], [["Difference Engine"]])
    hits = index.search("Who designed the machine Ada Lovelace wrote about?", SearchFilter("t1"), 10)
    ids = [h.chunk_id for h in hits]
    assert ids[:2] == [chunk("bridge", 0).id, chunk("target", 0).id]
    assert chunk("noise", 0).id not in ids
    assert hits[0].score > hits[1].score > 0


def test_specific_seed_outranks_common_one(index: NetworkXGraphIndex) -> None:
    for i in range(6):
        index.upsert_document(f"g{i}", [chunk(f"g{i}", 0)], [["Company"]])
    index.upsert_document("rare", [chunk("rare", 0)], [["Zorblax"]])
    hits = index.search("Company Zorblax", SearchFilter("t1"), 3)
    assert hits[0].chunk_id == chunk("rare", 0).id


def test_no_link_returns_empty_and_partial_match_links(index: NetworkXGraphIndex) -> None:
    index.upsert_document("d1", [chunk("d1", 0)], [["Kestrel Devices"]])
    assert index.search("weather tomorrow", SearchFilter("t1"), 5) == []
    assert index.search("anything", SearchFilter("t1"), 0) == []
    assert index.link("tell me about Kestrel", "t1") == {"kestrel device": 0.25}
    assert index.link("tell me about Kestral", "t1") == {"kestrel device": 0.25}  # typo corrected
    assert index.link("tell me about Kestral", "nobody") == {}
    assert [h.chunk_id for h in index.search("tell me about Kestrel", SearchFilter("t1"), 5)] == [chunk("d1", 0).id]


def test_query_extractor_adds_links(tmp_path: Path) -> None:
    def fake_extractor(texts: object) -> list[list[str]]:
        return [["Alice Smith"]]

    index = NetworkXGraphIndex(tmp_path, query_extractor=fake_extractor)
    index.upsert_document("d1", [chunk("d1", 0)], [["Alice Smith"]])
    assert index.link("who is she", "t1") == {"alice smith": 1.0}


# ------------------------------------------------------------------------------------------- persistence
def test_persistence_round_trip_and_other_process_writes(tmp_path: Path) -> None:
    writer = NetworkXGraphIndex(tmp_path, compact_every=3)
    reader = NetworkXGraphIndex(tmp_path)
    flt = SearchFilter("t1")
    writer.upsert_document("d1", [chunk("d1", 0)], [["Alice", "Bob"]])
    writer.upsert_document("d2", [chunk("d2", 0)], [["Bob"]])
    assert {h.chunk_id for h in reader.search("Bob", flt, 5)} == {chunk("d1", 0).id, chunk("d2", 0).id}
    writer.upsert_document("d3", [chunk("d3", 0)], [["Carol"]])  # third record: compaction to a snapshot
    writer.delete_document("d1")
    before = writer.search("Bob", flt, 5)
    assert reader.search("Bob", flt, 5) == before and reader.count("t1") == 2
    writer.close()
    reopened = NetworkXGraphIndex(tmp_path)
    assert reopened.search("Bob", flt, 5) == before
    assert reopened.count("t1") == 2 and reopened.search("Alice", flt, 5) == []
    reopened.delete_document("d2")  # known only from disk: still found
    assert NetworkXGraphIndex(tmp_path).count("t1") == 1


def test_torn_journal_tail_is_ignored(tmp_path: Path) -> None:
    index = NetworkXGraphIndex(tmp_path)
    index.upsert_document("d1", [chunk("d1", 0)], [["Alice"]])
    with open(tenant_dir(tmp_path, "t1") / JOURNAL, "ab") as fh:
        fh.write(b"\xff\x00\x00\x00partial")
    reopened = NetworkXGraphIndex(tmp_path)
    assert [h.chunk_id for h in reopened.search("Alice", SearchFilter("t1"), 5)] == [chunk("d1", 0).id]


def test_concurrent_searches_during_writes_see_whole_documents(index: NetworkXGraphIndex) -> None:
    """A reader never sees half a document: each version of "d1" has two chunks that mention the shared entity."""
    import threading

    errors: list[BaseException] = []
    stop = threading.Event()

    def write() -> None:
        try:
            for v in range(60):
                chunks = [chunk("d1", 2 * v), chunk("d1", 2 * v + 1)]
                index.upsert_document("d1", chunks, [["Shared", f"A{v}"], ["Shared", f"B{v}"]])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            stop.set()

    index.upsert_document("d1", [chunk("d1", 0), chunk("d1", 1)], [["Shared"], ["Shared"]])
    writer = threading.Thread(target=write)
    writer.start()
    sizes = set()
    while not stop.is_set():
        hits = index.search("Shared", SearchFilter("t1"), 10)
        sizes.add(len(hits))
        assert len({int(h.chunk_id.rsplit("-", 1)[1]) // 2 for h in hits}) == 1  # one version only
    writer.join()
    assert not errors and sizes == {2}


def test_compaction_by_another_instance_keeps_newer_records(tmp_path: Path) -> None:
    a = NetworkXGraphIndex(tmp_path)
    a.upsert_document("d1", [chunk("d1", 0)], [["Alice"]])
    b = NetworkXGraphIndex(tmp_path)  # replays d1: it has a record not yet in a snapshot
    a.upsert_document("d2", [chunk("d2", 0)], [["Bob"]])
    b.close()  # compacts: must not write its stale graph over d2
    a.upsert_document("d3", [chunk("d3", 0)], [["Carol"]])
    fresh = NetworkXGraphIndex(tmp_path)
    assert fresh.count("t1") == 3
    assert [h.chunk_id for h in fresh.search("Bob", SearchFilter("t1"), 5)] == [chunk("d2", 0).id]
