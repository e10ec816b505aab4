"""One tenant's knowledge graph in memory (a ``networkx.Graph``) and the per-document edits on it.

Node ids are strings with a kind prefix: ``e:<entity key>``, ``c:<chunk id>``, ``d:<document id>``,
``s:<document id>/<section path>``. Each tenant has its own graph, so entity nodes are per tenant and nothing links
two tenants. Edges:

- chunk - entity (mentions; no attributes, kept small),
- document - section - sub-section - chunk (structure; a chunk without a section hangs off its document),
- entity - entity (co-occurrence in one chunk; ``weight`` = number of chunks where both appear; only the first
  ``max_cooc_entities`` entities of a chunk pair up, which bounds the edges per chunk).

Co-occurrence edges live in a second graph (``cooc``) over the same entity ids: the retrieval walk only follows
mentions, and keeping tens of entity neighbours per entity out of its adjacency made it 2x faster. ``mentions`` counts
the chunks mentioning each entity (its specificity, and the orphan test on delete).

Chunk nodes carry ``f``: a :class:`ChunkMeta` with the filter fields, so filters are applied inside the index.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from itertools import combinations
from typing import NamedTuple

import networkx as nx

from core.types import ChunkRecord
from retrieval.graph.normalize import STOP_WORDS, normalize_entity

ENTITY, CHUNK, DOC, SECTION = "e:", "c:", "d:", "s:"


class ChunkMeta(NamedTuple):
    """Filter fields of one chunk, stored on its node."""

    tenant_id: str
    document_id: str
    acl_groups: tuple[str, ...]
    doc_type: str
    tags: tuple[str, ...]
    created_at: dt.datetime | None

    @classmethod
    def of(cls, chunk: ChunkRecord) -> ChunkMeta:
        return cls(
            chunk.tenant_id,
            chunk.document_id,
            tuple(chunk.acl_groups),
            chunk.doc_type,
            tuple(chunk.tags),
            chunk.created_at,
        )


class TenantGraph:
    """The graph of one tenant plus two lookup tables kept in step with it.

    ``docs`` maps a document id to its chunk and section node ids; ``token_index`` maps a content token to the entity
    keys containing it (partial linking). Not thread-safe: the index serialises writers and readers around it.
    """

    def __init__(self, tenant_id: str, *, max_cooc_entities: int = 16) -> None:
        self.tenant_id = tenant_id
        self.max_cooc_entities = max_cooc_entities
        self.graph = nx.Graph()
        self.cooc = nx.Graph()
        self.mentions: dict[str, int] = {}
        self.docs: dict[str, tuple[list[str], list[str]]] = {}
        self.token_index: dict[str, set[str]] = {}

    @property
    def chunk_count(self) -> int:
        return sum(len(chunks) for chunks, _ in self.docs.values())

    def entity_degree(self, node: str) -> int:
        """Number of chunks mentioning the entity node (kept on the node as ``n``)."""
        return self.mentions.get(node, 0)

    # ---------------------------------------------------------------- writes
    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        self.delete_document(document_id)
        if not chunks:
            return
        g = self.graph
        doc_node = DOC + document_id
        g.add_node(doc_node)
        chunk_nodes: list[str] = []
        section_nodes: list[str] = []
        for chunk, names in zip(chunks, entities, strict=True):
            node = CHUNK + chunk.id
            if node in g:  # the same chunk twice in one document: keep the first
                continue
            g.add_node(node, f=ChunkMeta.of(chunk))
            chunk_nodes.append(node)
            parent = doc_node
            for depth in range(1, len(chunk.section_path) + 1):
                sec = f"{SECTION}{document_id}/" + "\x1f".join(chunk.section_path[:depth])
                if sec not in g:
                    g.add_node(sec)
                    section_nodes.append(sec)
                g.add_edge(parent, sec)
                parent = sec
            g.add_edge(parent, node)
            keys = list(dict.fromkeys(k for k in (normalize_entity(n) for n in names) if k))
            for key in keys:
                ent = ENTITY + key
                if ent not in self.mentions:
                    self.mentions[ent] = 0
                    for tok in key.split():
                        if tok not in STOP_WORDS:
                            self.token_index.setdefault(tok, set()).add(key)
                g.add_edge(node, ent)
                self.mentions[ent] += 1
            cooc_adj = self.cooc.adj
            for a, b in combinations(keys[: self.max_cooc_entities], 2):
                ea, eb = ENTITY + a, ENTITY + b
                if ea in cooc_adj and eb in cooc_adj[ea]:
                    cooc_adj[ea][eb]["weight"] += 1
                else:
                    self.cooc.add_edge(ea, eb, weight=1)
        self.docs[document_id] = (chunk_nodes, section_nodes)

    def delete_document(self, document_id: str) -> None:
        entry = self.docs.pop(document_id, None)
        if entry is None:
            return
        g = self.graph
        chunk_nodes, section_nodes = entry
        touched: set[str] = set()
        for node in chunk_nodes:
            ents = [n for n in g.adj[node] if n.startswith(ENTITY)]
            keys = [e[len(ENTITY) :] for e in ents]
            # ``entities`` were de-duplicated in insertion order, which is the adjacency order: same pairs as upsert.
            for a, b in combinations(keys[: self.max_cooc_entities], 2):
                ea, eb = ENTITY + a, ENTITY + b
                data = self.cooc.adj[ea][eb]
                data["weight"] -= 1
                if data["weight"] <= 0:
                    self.cooc.remove_edge(ea, eb)
                    for e in (ea, eb):
                        if not self.cooc.adj[e]:
                            self.cooc.remove_node(e)
            for ent in ents:
                self.mentions[ent] -= 1
            touched.update(ents)
            g.remove_node(node)
        g.remove_nodes_from(section_nodes)
        g.remove_node(DOC + document_id)
        for ent in touched:
            if self.mentions[ent] <= 0:
                self._drop_entity(ent)

    def _drop_entity(self, ent: str) -> None:
        key = ent[len(ENTITY) :]
        for tok in key.split():
            keys = self.token_index.get(tok)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self.token_index[tok]
        self.graph.remove_node(ent)
        del self.mentions[ent]

    # ------------------------------------------------------------ snapshots
    def to_state(self) -> dict[str, object]:
        return {
            "format": 2,
            "tenant_id": self.tenant_id,
            "max_cooc_entities": self.max_cooc_entities,
            "graph": self.graph,
            "cooc": self.cooc,
            "mentions": self.mentions,
            "docs": self.docs,
            "token_index": self.token_index,
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> TenantGraph:
        if state.get("format") != 2:
            raise ValueError(f"unknown graph snapshot format {state.get('format')!r}")
        tg = cls(str(state["tenant_id"]), max_cooc_entities=int(state["max_cooc_entities"]))  # type: ignore[call-overload]
        tg.graph = state["graph"]  # type: ignore[assignment]
        tg.cooc = state["cooc"]  # type: ignore[assignment]
        tg.mentions = state["mentions"]  # type: ignore[assignment]
        tg.docs = state["docs"]  # type: ignore[assignment]
        tg.token_index = state["token_index"]  # type: ignore[assignment]
        return tg
