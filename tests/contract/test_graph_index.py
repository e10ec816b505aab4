"""The GraphIndex contract against both graph stores: the embedded networkx graph (on disk under a temp dir) and the
PostgreSQL graph store (a throw-away database from the ``pg_url`` fixture). The PostgreSQL class also checks what only
it promises: writes that join the caller's transaction, and the same ranking as the embedded graph."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from core.db.models import Base, Chunk, Document, GraphEdge, GraphNode, GraphToken, Tenant
from core.db.session import Database
from core.types import SearchFilter
from retrieval.graph import NetworkXGraphIndex
from retrieval.graph.sql import PostgresGraphIndex
from tests.contract.graph_contract import GraphContract
from tests.contract.index_contract import chunk

#: Search deadline: generous, so that a busy test machine never cuts a walk short (that would change the ranking).
TIMEOUT_S = 20.0
GRAPH_TABLES = [GraphNode.__table__, GraphEdge.__table__, GraphToken.__table__]


@pytest.mark.unit
class TestNetworkXGraphIndex(GraphContract):
    def make_index(self, root: Path) -> NetworkXGraphIndex:
        return NetworkXGraphIndex(root, timeout_s=TIMEOUT_S)

    def leftovers(self, index: NetworkXGraphIndex, tenant_id: str) -> int:
        t = index._tenants.get(tenant_id)
        if t is None:
            return 0
        g = t.graph
        return g.graph.number_of_nodes() + g.cooc.number_of_nodes() + len(g.token_index) + len(g.mentions)


@pytest.mark.integration
class TestPostgresGraphIndex(GraphContract):
    engine: Any = None

    @pytest.fixture(autouse=True)
    def _database(self, pg_module_url: str) -> Iterator[None]:
        """One database for the module (creating one per test was most of the suite's time); emptied per test."""
        self.engine = sa.create_engine(pg_module_url, pool_size=8)
        Base.metadata.create_all(self.engine)
        with self.engine.begin() as conn:
            conn.execute(sa.text("TRUNCATE graph_nodes, graph_edges, graph_tokens, tenants CASCADE"))
        yield
        self.engine.dispose()

    def make_index(self, root: Path) -> PostgresGraphIndex:
        return PostgresGraphIndex(
            self.engine, timeout_s=TIMEOUT_S
        )  # ``root`` is unused: "reopening" is a new index on the same database

    def leftovers(self, index: PostgresGraphIndex, tenant_id: str) -> int:
        with self.engine.connect() as conn:
            return sum(
                conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.tenant_id == tenant_id)).scalar_one()
                for t in GRAPH_TABLES
            )

    def test_refuses_a_database_that_is_not_postgresql(self, tmp_path: Path) -> None:
        from core.errors import AppError

        with pytest.raises(AppError):
            PostgresGraphIndex(sa.create_engine(f"sqlite:///{tmp_path / 'x.db'}"))

    def test_writes_join_the_callers_transaction(self, index: PostgresGraphIndex, pg_module_url: str) -> None:
        """The pipeline writes the graph through its session: rolled back with the chunk rows, committed with them."""
        db = Database(pg_module_url)
        c = chunk("t1", "d1", 0, text="Alice met Bob")
        try:
            with pytest.raises(RuntimeError), db.session() as s:
                index.upsert_document_in(s, "d1", [c], [["Alice", "Bob"]])
                raise RuntimeError("the chunk rows failed")
            assert index.count("t1") == 0 and self.leftovers(index, "t1") == 0
            with db.session() as s:
                s.add(Tenant(id="t1", name="t1"))
                s.flush()
                s.add(
                    Document(id="d1", tenant_id="t1", filename="a.txt", content_hash="h", version=1, status="indexed")
                )
                s.flush()
                s.add(Chunk(id=c.id, tenant_id="t1", document_id="d1", document_version=1, order=0, text=c.text))
                index.upsert_document_in(s, "d1", [c], [["Alice", "Bob"]])
            assert [h.chunk_id for h in index.search("Alice", SearchFilter("t1"), 5)] == [c.id]
            with db.session() as s:
                index.delete_document_in(s, "d1")
                s.execute(sa.delete(Chunk).where(Chunk.document_id == "d1"))
            assert self.leftovers(index, "t1") == 0
        finally:
            db.dispose()

    def test_ranks_like_the_embedded_graph(self, index: PostgresGraphIndex, tmp_path: Path) -> None:
        """The same edits on both stores give the same hits and scores (the bounds are not reached here)."""
        embedded = NetworkXGraphIndex(tmp_path / "nx", timeout_s=TIMEOUT_S)
        rng = random.Random(7)
        names = [f"Entity {w}" for w in ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "theta")]
        docs = {}
        for d in range(25):
            n = rng.randint(1, 4)
            chunks = [chunk("t1", f"doc{d}", i, acl=rng.choice([(), ("eng",)]), text=f"c{i} d{d}") for i in range(n)]
            ents = [rng.sample(names, rng.randint(0, 3)) for _ in chunks]
            docs[f"doc{d}"] = (chunks, ents)
        for doc, (chunks, ents) in docs.items():
            index.upsert_document(doc, chunks, ents)
            embedded.upsert_document(doc, chunks, ents)
        for doc in ("doc3", "doc11", "doc20"):
            index.delete_document(doc)
            embedded.delete_document(doc)
        try:
            for query in ("entity alpha", "alpha and gamma", "sigma theta kappa", "entity", "delta?"):
                for flt in (SearchFilter("t1"), SearchFilter("t1", acl_groups=("sales",))):
                    ours, theirs = index.search(query, flt, 20), embedded.search(query, flt, 20)
                    assert [h.chunk_id for h in ours] == [h.chunk_id for h in theirs], (query, flt)
                    assert [h.score for h in ours] == pytest.approx([h.score for h in theirs], rel=1e-6)
            assert index.count("t1") == embedded.count("t1")
        finally:
            embedded.close()
