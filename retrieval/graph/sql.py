"""``PostgresGraphIndex``: the knowledge graph in PostgreSQL (distributed mode); a ``retrieval.protocols.GraphIndex``.

The graph is the embedded store's (:mod:`retrieval.graph.store`: entity, chunk, document and section nodes; mention,
structure and co-occurrence edges), kept per tenant in the tables ``graph_nodes``, ``graph_edges`` and
``graph_tokens`` (see :mod:`core.db.models`). No process holds the graph in memory: every replica reads what it needs.

Writes. ``upsert_document_in(session, ...)`` / ``delete_document_in(session, ...)`` write through the caller's
SQLAlchemy session, so the ingestion pipeline commits a document's graph together with its chunk rows (or neither);
``upsert_document`` / ``delete_document`` run the same edit in a transaction of their own. Writers of one tenant are
serialised by a transaction-scoped advisory lock (entity mention counts are shared between documents); a document's
nodes and edges are replaced in one transaction, so a reader sees the old set or the new one.

Search links the query to entity keys (exact normalised n-grams; else names sharing words with the query, via
``graph_tokens``, with typo correction against words of the same first letter), weights seeds by specificity
``1 / log(1 + mentions)`` exactly like the embedded index, then fetches the bounded neighbourhood layer by layer with
SQL (the same bounds as :func:`retrieval.graph.ppr.neighbourhood`: ``hops``, ``max_nodes``, ``max_fanout``,
``max_seed_fanout``, and at most ``4 * max_nodes`` chunk rows per entity), inside one read-only REPEATABLE READ
transaction with a statement timeout, and runs personalised PageRank on that subgraph with
:func:`retrieval.graph.ppr.personalized_pagerank`. Filters are applied with ``SearchFilter.admits`` on the filter
fields stored on each chunk node, so a hidden chunk never enters the walk.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections import Counter
from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from core.db.models import GraphEdge, GraphNode, GraphToken
from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.graph.index import MAX_PARTIAL_KEYS, PARTIAL_WEIGHT, TYPO_MIN_LEN, TYPO_MIN_SCORE, QueryExtractor
from retrieval.graph.normalize import STOP_WORDS, content_tokens, normalize_entity, query_ngrams
from retrieval.graph.ppr import PPRParams, personalized_pagerank
from retrieval.graph.store import CHUNK, DOC, ENTITY, SECTION, ChunkMeta

NODES: sa.Table = GraphNode.__table__  # type: ignore[assignment]
EDGES: sa.Table = GraphEdge.__table__  # type: ignore[assignment]
TOKENS: sa.Table = GraphToken.__table__  # type: ignore[assignment]

#: First key of the advisory lock serialising one tenant's graph writers (the second is a hash of the tenant id).
LOCK_CLASS = 0x6B627161  # "kbqa"
#: Query words looked up for partial linking (a long question adds little beyond its first words).
MAX_QUERY_TOKENS = 32
#: Rows of ``graph_tokens`` read for typo correction of one query word (words of the same first letter).
MAX_TYPO_VOCABULARY = 20_000

_CHUNKS_OF = sa.text(
    """
    SELECT f.ord, m.src, n.document_id, n.acl_groups, n.doc_type, n.tags, n.created_at
    FROM unnest(CAST(:entities AS text[])) WITH ORDINALITY AS f(entity, ord)
    CROSS JOIN LATERAL (
        SELECT e.src FROM graph_edges e
        WHERE e.tenant_id = :tenant AND e.kind = 'm' AND e.dst = f.entity
        ORDER BY e.src LIMIT :cap
    ) AS m
    JOIN graph_nodes n ON n.tenant_id = :tenant AND n.node_id = m.src
    ORDER BY f.ord, m.src
    """
)
_ENTITIES_OF = sa.text(
    """
    SELECT e.src, e.dst, n.mentions FROM graph_edges e
    JOIN graph_nodes n ON n.tenant_id = e.tenant_id AND n.node_id = e.dst
    WHERE e.tenant_id = :tenant AND e.kind = 'm' AND e.src = ANY(CAST(:chunks AS text[]))
    ORDER BY e.src, e.dst
    """
)
_HUB_CHUNKS = sa.text(
    """
    SELECT src FROM graph_edges
    WHERE tenant_id = :tenant AND kind = 'm' AND dst = :hub AND src = ANY(CAST(:chunks AS text[]))
    """
)


def section_node(document_id: str, path: Sequence[str]) -> str:
    """Section node id: the path is hashed so that long headings never exceed the key length."""
    digest = hashlib.sha256("\x1f".join(path).encode("utf-8")).hexdigest()[:24]
    return f"{SECTION}{document_id}/{digest}"


class PostgresGraphIndex:
    """Knowledge-graph index on PostgreSQL; ``engine`` is the application database's engine."""

    name = "graph"

    def __init__(
        self,
        engine: Engine,
        *,
        query_extractor: QueryExtractor | None = None,
        ppr: PPRParams | None = None,
        timeout_s: float = 0.5,
        max_seeds: int = 16,
        max_cooc_entities: int = 16,
    ) -> None:
        if engine.dialect.name != "postgresql":
            raise AppError(
                ErrorCode.INDEX_UNAVAILABLE,
                f"the postgres graph store needs a PostgreSQL database, not {engine.dialect.name}",
            )
        self.engine = engine
        self.query_extractor = query_extractor
        self.ppr = ppr or PPRParams()
        self.timeout_s = timeout_s
        self.max_seeds = max_seeds
        self.max_cooc_entities = max_cooc_entities

    # ------------------------------------------------------------- writes
    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        self._check(chunks, entities)
        self._in_own_transaction(lambda conn: self._upsert(conn, document_id, chunks, entities))

    def delete_document(self, document_id: str) -> None:
        self._in_own_transaction(lambda conn: self._delete(conn, document_id))

    def upsert_document_in(
        self, session: Session, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        """The upsert inside the caller's transaction (committed or rolled back with the caller's other rows)."""
        self._check(chunks, entities)
        self._guarded(lambda: self._upsert(session.connection(), document_id, chunks, entities))

    def delete_document_in(self, session: Session, document_id: str) -> None:
        self._guarded(lambda: self._delete(session.connection(), document_id))

    @staticmethod
    def _check(chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]) -> None:
        if len(chunks) != len(entities):
            raise AppError(ErrorCode.VALIDATION, "entities must have one list per chunk")
        if len({c.tenant_id for c in chunks}) > 1:
            raise AppError(ErrorCode.VALIDATION, "all chunks of a document must belong to one tenant")

    def _in_own_transaction(self, edit: Any) -> None:
        def run() -> None:
            with self.engine.begin() as conn:
                edit(conn)

        self._guarded(run)

    @staticmethod
    def _guarded(fn: Any) -> Any:
        try:
            return fn()
        except SQLAlchemyError as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"graph store unavailable: {type(exc).__name__}") from exc

    @staticmethod
    def _lock(conn: Connection, tenant_id: str) -> None:
        conn.execute(
            sa.text("SELECT pg_advisory_xact_lock(:cls, hashtext(:tenant))"), {"cls": LOCK_CLASS, "tenant": tenant_id}
        )

    def _upsert(
        self, conn: Connection, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        self._delete(conn, document_id)
        if not chunks:
            return
        tenant = chunks[0].tenant_id
        self._lock(conn, tenant)
        doc_node = DOC + document_id
        nodes: dict[str, dict[str, Any]] = {doc_node: self._node(tenant, doc_node, "d", document_id)}
        edges: dict[tuple[str, str], dict[str, Any]] = {}
        mentions: Counter[str] = Counter()
        cooc: Counter[tuple[str, str]] = Counter()

        def edge(src: str, dst: str, kind: str) -> None:
            edges.setdefault((src, dst), {"src": src, "dst": dst, "kind": kind, "weight": 1})

        for chunk, names in zip(chunks, entities, strict=True):
            node = CHUNK + chunk.id
            if node in nodes:  # the same chunk twice in one document: keep the first (as the embedded store does)
                continue
            meta = ChunkMeta.of(chunk)
            nodes[node] = self._node(tenant, node, "c", document_id) | {
                "acl_groups": list(meta.acl_groups),
                "doc_type": meta.doc_type,
                "tags": list(meta.tags),
                "created_at": meta.created_at,
            }
            parent = doc_node
            for depth in range(1, len(chunk.section_path) + 1):
                sec = section_node(document_id, chunk.section_path[:depth])
                nodes.setdefault(sec, self._node(tenant, sec, "s", document_id))
                edge(parent, sec, "s")
                parent = sec
            edge(parent, node, "s")
            keys = list(dict.fromkeys(k for k in (normalize_entity(n) for n in names) if k))
            for key in keys:
                edge(node, ENTITY + key, "m")
                mentions[ENTITY + key] += 1
            for a, b in combinations(keys[: self.max_cooc_entities], 2):
                cooc[(ENTITY + min(a, b), ENTITY + max(a, b))] += 1
        for (a, b), weight in cooc.items():
            edges[(a, b)] = {"src": a, "dst": b, "kind": "c", "weight": weight}

        conn.execute(NODES.insert(), list(nodes.values()))
        if mentions:
            ents = [self._node(tenant, e, "e", None) | {"mentions": n} for e, n in sorted(mentions.items())]
            stmt = pg_insert(NODES).values(ents)
            conn.execute(
                stmt.on_conflict_do_update(
                    index_elements=[NODES.c.tenant_id, NODES.c.node_id],
                    set_={"mentions": NODES.c.mentions + stmt.excluded.mentions},
                )
            )
            tokens = [
                {"tenant_id": tenant, "token": tok, "entity": e[len(ENTITY) :]}
                for e in sorted(mentions)
                for tok in dict.fromkeys(e[len(ENTITY) :].split())
                if tok not in STOP_WORDS
            ]
            if tokens:
                conn.execute(pg_insert(TOKENS).values(tokens).on_conflict_do_nothing())
        conn.execute(EDGES.insert(), [{"tenant_id": tenant, "document_id": document_id} | e for e in edges.values()])

    @staticmethod
    def _node(tenant: str, node_id: str, kind: str, document_id: str | None) -> dict[str, Any]:
        return {
            "tenant_id": tenant,
            "node_id": node_id,
            "kind": kind,
            "document_id": document_id,
            "mentions": 0,
            "acl_groups": None,
            "doc_type": None,
            "tags": None,
            "created_at": None,
        }

    def _delete(self, conn: Connection, document_id: str) -> None:
        tenants = conn.execute(
            sa.select(NODES.c.tenant_id).where(NODES.c.document_id == document_id, NODES.c.kind == "d")
        ).scalars()
        for tenant in sorted(set(tenants)):
            self._lock(conn, tenant)
            mine = sa.and_(EDGES.c.tenant_id == tenant, EDGES.c.document_id == document_id)
            lost = conn.execute(
                sa.select(EDGES.c.dst, sa.func.count()).where(mine, EDGES.c.kind == "m").group_by(EDGES.c.dst)
            ).all()
            conn.execute(EDGES.delete().where(mine))
            conn.execute(NODES.delete().where(NODES.c.tenant_id == tenant, NODES.c.document_id == document_id))
            if not lost:
                continue
            conn.execute(
                NODES.update()
                .where(NODES.c.tenant_id == tenant, NODES.c.node_id == sa.bindparam("ent"))
                .values(mentions=NODES.c.mentions - sa.bindparam("n")),
                [{"ent": e, "n": n} for e, n in sorted(lost)],
            )
            orphans = conn.execute(
                NODES.delete()
                .where(
                    NODES.c.tenant_id == tenant,
                    NODES.c.node_id.in_([e for e, _ in lost]),
                    NODES.c.mentions <= 0,
                )
                .returning(NODES.c.node_id)
            ).scalars()
            keys = [e[len(ENTITY) :] for e in orphans]
            if keys:
                conn.execute(TOKENS.delete().where(TOKENS.c.tenant_id == tenant, TOKENS.c.entity.in_(keys)))

    def flush(self) -> None:
        """Nothing to do: every write is committed when it returns."""

    def close(self) -> None:
        """The engine belongs to the caller (the application's database); nothing to release here."""

    # -------------------------------------------------------------- reads
    def count(self, tenant_id: str | None = None) -> int:
        q = sa.select(sa.func.count()).select_from(NODES).where(NODES.c.kind == "c")
        if tenant_id is not None:
            q = q.where(NODES.c.tenant_id == tenant_id)
        return int(self._read(lambda conn: conn.execute(q).scalar_one()))

    def _candidates(self, query: str) -> list[str]:
        candidates = query_ngrams(query)
        if self.query_extractor is not None:
            seen = set(candidates)
            extracted = (normalize_entity(n) for n in self.query_extractor([query])[0])
            candidates += [k for k in extracted if k and k not in seen]
        return candidates

    def _read(self, fn: Any) -> Any:
        """``fn(conn)`` in one read-only REPEATABLE READ transaction (one snapshot for all the walk's queries) under
        a statement timeout; an unreachable database or a timed-out query raises ``INDEX_UNAVAILABLE``."""
        ms = max(1, int(self.timeout_s * 1000))

        def run() -> Any:
            with self.engine.connect() as conn:
                conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                with conn.begin():
                    conn.execute(sa.text(f"SET LOCAL statement_timeout = {ms}"))
                    return fn(conn)

        return self._guarded(run)

    def link(self, query: str, tenant_id: str) -> dict[str, float]:
        """Entity keys of the tenant's graph that ``query`` names, with a match weight (1 exact, <1 partial)."""
        candidates = self._candidates(query)
        found, _ = self._read(lambda conn: self._link(conn, tenant_id, query, candidates))
        return found  # type: ignore[no-any-return]

    def _link(
        self, conn: Connection, tenant: str, query: str, candidates: list[str]
    ) -> tuple[dict[str, float], dict[str, int]]:
        """Linked keys with match weights, and the mention counts of the linked entities."""
        degree: dict[str, int] = {}
        if candidates:
            rows = conn.execute(
                sa.select(NODES.c.node_id, NODES.c.mentions).where(
                    NODES.c.tenant_id == tenant, NODES.c.node_id.in_([ENTITY + c for c in candidates])
                )
            ).all()
            degree = {node: int(n) for node, n in rows}
        found: dict[str, float] = {}
        covered: set[str] = set()
        for key in candidates:
            if key and key not in found and (ENTITY + key) in degree:
                tokens = set(key.split())
                if len(tokens) == 1 and tokens <= covered:
                    continue  # a lone word inside a longer linked name adds noise, not signal
                found[key] = 1.0
                covered |= tokens
        if found:
            return found, degree
        query_tokens = set(content_tokens(query)[:MAX_QUERY_TOKENS])
        keys_of: dict[str, list[str]] = {}
        for tok in sorted(query_tokens):
            keys_of[tok] = list(
                conn.execute(
                    sa.select(TOKENS.c.entity)
                    .where(TOKENS.c.tenant_id == tenant, TOKENS.c.token == tok)
                    .limit(MAX_PARTIAL_KEYS + 1)
                ).scalars()
            )
        for tok in self._typo_fixes(conn, tenant, [t for t, keys in keys_of.items() if not keys]):
            keys_of[tok] = list(
                conn.execute(
                    sa.select(TOKENS.c.entity)
                    .where(TOKENS.c.tenant_id == tenant, TOKENS.c.token == tok)
                    .limit(MAX_PARTIAL_KEYS + 1)
                ).scalars()
            )
        tokens = set(keys_of)
        for keys in keys_of.values():
            if len(keys) > MAX_PARTIAL_KEYS:
                continue  # a word in thousands of names links nothing in particular
            for key in keys:
                key_tokens = set(key.split())
                overlap = len(key_tokens & tokens) / len(key_tokens)
                found[key] = max(found.get(key, 0.0), PARTIAL_WEIGHT * overlap)
        best = dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds * 4])
        if best:
            rows = conn.execute(
                sa.select(NODES.c.node_id, NODES.c.mentions).where(
                    NODES.c.tenant_id == tenant, NODES.c.node_id.in_([ENTITY + k for k in best])
                )
            ).all()
            degree = {node: int(n) for node, n in rows}
        return best, degree

    @staticmethod
    def _typo_fixes(conn: Connection, tenant: str, unknown: list[str]) -> set[str]:
        """Entity-name words close to query words that are in no name (``kestral`` -> ``kestrel``); candidates are
        the words of the same first letter (the embedded index compares against every word)."""
        unknown = [t for t in unknown if len(t) >= TYPO_MIN_LEN and t.isalpha()]
        if not unknown:
            return set()
        try:
            from rapidfuzz import fuzz, process
        except ImportError:  # optional: without it, no typo correction
            return set()
        fixes: set[str] = set()
        for tok in unknown:
            first = tok[0]
            vocabulary = list(
                conn.execute(
                    sa.select(TOKENS.c.token)
                    .where(TOKENS.c.tenant_id == tenant, TOKENS.c.token >= first, TOKENS.c.token < chr(ord(first) + 1))
                    .distinct()
                    .limit(MAX_TYPO_VOCABULARY)
                ).scalars()
            )
            match = process.extractOne(tok, vocabulary, scorer=fuzz.ratio, score_cutoff=TYPO_MIN_SCORE)
            if match is not None:
                fixes.add(match[0])
        return fixes

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        if k <= 0:
            return []
        deadline = time.monotonic() + self.timeout_s
        candidates = self._candidates(query)
        nodes, edges, seeds = self._read(lambda conn: self._subgraph(conn, flt, query, candidates, deadline))
        if not seeds:
            return []
        personal = np.zeros(len(nodes))
        for i, node in enumerate(nodes[: len(seeds)]):
            personal[i] = seeds[node]
        scores = personalized_pagerank(len(nodes), edges, personal, self.ppr, deadline)
        ranked = [(float(scores[i]), node) for i, node in enumerate(nodes) if node.startswith(CHUNK)]
        ranked = [r for r in ranked if r[0] > 0.0]
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return [Hit(chunk_id=node[len(CHUNK) :], score=score) for score, node in ranked[:k]]

    def _subgraph(
        self, conn: Connection, flt: SearchFilter, query: str, candidates: list[str], deadline: float
    ) -> tuple[list[str], list[tuple[int, int]], dict[str, float]]:
        tenant = flt.tenant_id
        linked, degree = self._link(conn, tenant, query, candidates)
        seeds: dict[str, float] = {}
        for key, match in linked.items():
            d = degree.get(ENTITY + key, 0)
            if d:
                seeds[ENTITY + key] = match / math.log(1.0 + d)
        if not seeds:
            return [], [], {}
        seeds = dict(sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds])
        walk = _SqlWalk(conn, tenant, flt, degree, self.ppr)
        nodes, edges = walk.run(seeds, deadline)
        return nodes, edges, seeds


class _SqlWalk:
    """:func:`retrieval.graph.ppr.neighbourhood` with one SQL query per layer instead of an in-memory adjacency."""

    def __init__(
        self, conn: Connection, tenant: str, flt: SearchFilter, degree: dict[str, int], params: PPRParams
    ) -> None:
        self.conn, self.tenant, self.flt, self.degree, self.params = conn, tenant, flt, degree, params
        self.index: dict[str, int] = {}
        self.nodes: list[str] = []
        self.edges: list[tuple[int, int]] = []

    def add(self, node: str) -> int:
        i = self.index.get(node)
        if i is None:
            i = self.index[node] = len(self.nodes)
            self.nodes.append(node)
        return i

    def deg(self, node: str) -> int:
        return self.degree.get(node, 0)

    def run(self, seeds: dict[str, float], deadline: float) -> tuple[list[str], list[tuple[int, int]]]:
        params = self.params
        frontier = sorted(seeds, key=self.deg)
        for e in frontier:
            self.add(e)
        hubs = [e for e in frontier if self.deg(e) > params.max_seed_fanout]
        if len(hubs) < len(frontier):
            frontier = frontier[: len(frontier) - len(hubs)]
        else:
            hubs, frontier = hubs[1:], hubs[:1]
        for hop in range(params.hops):
            new_chunks = self.chunks_of(frontier, expand_hubs=hop == 0, deadline=deadline)
            if hop == params.hops - 1 or time.monotonic() > deadline:
                break
            frontier = self.entities_of(new_chunks)
        reached = [n for n in self.nodes if n.startswith(CHUNK)]
        for h in hubs:
            if not reached:
                break
            hi = self.index[h]
            rows = self.conn.execute(_HUB_CHUNKS, {"tenant": self.tenant, "hub": h, "chunks": reached}).scalars()
            self.edges.extend((hi, self.index[c]) for c in rows)
        return self.nodes, self.edges

    def chunks_of(self, entities: list[str], *, expand_hubs: bool, deadline: float) -> list[str]:
        """Add the admitted chunks mentioning ``entities``; returns the ones new to the walk."""
        todo = [e for e in entities if expand_hubs or self.deg(e) <= self.params.max_fanout]
        new: list[str] = []
        cap = self.params.max_nodes
        batch = 256
        for start in range(0, len(todo), batch):
            part = todo[start : start + batch]
            rows = self.conn.execute(
                _CHUNKS_OF, {"tenant": self.tenant, "entities": part, "cap": 4 * self.params.max_nodes}
            ).all()
            skip: set[int] = set()  # entities whose expansion stopped at the node cap
            for ord_, c, doc, acl, doc_type, tags, created_at in rows:
                if ord_ in skip:
                    continue
                meta = ChunkMeta(self.tenant, doc, tuple(acl or ()), doc_type or "", tuple(tags or ()), created_at)
                if not self.flt.admits(meta):
                    continue
                if c not in self.index:
                    if len(self.nodes) >= cap:
                        skip.add(ord_)
                        continue
                    new.append(c)
                self.edges.append((self.index[part[ord_ - 1]], self.add(c)))
            if time.monotonic() > deadline:
                break
        return new

    def entities_of(self, chunks: list[str]) -> list[str]:
        """Add the entities the new ``chunks`` mention (up to ``max_nodes``); returns the ones new to the walk."""
        if not chunks:
            return []
        new: list[str] = []
        cap = self.params.max_nodes
        rows = self.conn.execute(_ENTITIES_OF, {"tenant": self.tenant, "chunks": chunks}).all()
        order = {c: i for i, c in enumerate(chunks)}
        for c, e, mentions in sorted(rows, key=lambda r: order[r[0]]):
            self.degree.setdefault(e, int(mentions))
            ci = self.index[c]
            ei = self.index.get(e)
            if ei is None:
                if len(self.nodes) >= cap:
                    continue
                new.append(e)
                ei = self.add(e)
            self.edges.append((ci, ei))
        new.sort(key=self.deg)
        return new
