"""Personalised PageRank over the filtered entity-chunk neighbourhood of the seed entities (HippoRAG style).

The walk never leaves what the caller may see: only chunk nodes the filter admits enter the subgraph, so a hidden
chunk can neither be returned nor carry rank between visible ones. Cost is bounded by ``hops`` (chunk layers),
``max_nodes``, ``max_fanout`` (hub entities beyond the seeds are not expanded) and a deadline; PageRank itself is
scipy sparse power iteration on the small subgraph.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from retrieval.graph.store import CHUNK, ENTITY


@dataclass(frozen=True, slots=True)
class PPRParams:
    hops: int = 2
    max_nodes: int = 2_500
    max_fanout: int = 100
    max_seed_fanout: int = 500
    damping: float = 0.85
    max_iter: int = 50
    tol: float = 1e-7


class _Walk:
    """Breadth-first collection of the neighbourhood, one chunk layer per hop."""

    def __init__(
        self,
        adj: Mapping[str, Mapping[str, object]],
        degree: Callable[[str], int],
        chunk_ok: Callable[[str], bool],
        params: PPRParams,
    ) -> None:
        self.adj, self.degree, self.chunk_ok, self.params = adj, degree, chunk_ok, params
        self.index: dict[str, int] = {}
        self.nodes: list[str] = []
        self.edges: list[tuple[int, int]] = []
        self.verdict: dict[str, bool] = {}

    def add(self, node: str) -> int:
        i = self.index.get(node)
        if i is None:
            i = self.index[node] = len(self.nodes)
            self.nodes.append(node)
        return i

    def full(self) -> bool:
        return len(self.nodes) >= self.params.max_nodes

    def admitted(self, c: str) -> bool:
        ok = self.verdict.get(c)
        if ok is None:
            ok = self.verdict[c] = self.chunk_ok(c)
        return ok

    def chunks_of(self, entities: list[str], *, expand_hubs: bool, deadline: float) -> list[str]:
        """Add the admitted chunks mentioning ``entities``; returns the ones new to the walk."""
        new: list[str] = []
        for e in entities:
            if not expand_hubs and self.degree(e) > self.params.max_fanout:
                continue
            ei = self.index[e]
            for c in self.adj[e]:
                if c[0] != CHUNK[0] or not self.admitted(c):
                    continue
                if c not in self.index:
                    if self.full():
                        break
                    new.append(c)
                self.edges.append((ei, self.add(c)))
            if time.monotonic() > deadline:
                break
        return new

    def entities_of(self, chunks: list[str]) -> list[str]:
        """Add the entities the new ``chunks`` mention (up to ``max_nodes``); returns the ones new to the walk."""
        new: list[str] = []
        index, edges, cap = self.index, self.edges, self.params.max_nodes
        for c in chunks:
            ci = index[c]
            for e in self.adj[c]:
                if e[0] != ENTITY[0]:
                    continue
                ei = index.get(e)
                if ei is None:
                    if len(self.nodes) >= cap:
                        continue
                    new.append(e)
                    ei = self.add(e)
                edges.append((ci, ei))
        new.sort(key=self.degree)
        return new


def neighbourhood(
    adj: Mapping[str, Mapping[str, object]],
    degree: Callable[[str], int],
    seeds: Mapping[str, float],
    chunk_ok: Callable[[str], bool],
    params: PPRParams,
    deadline: float,
) -> tuple[list[str], list[tuple[int, int]]]:
    """Nodes (seeds first) and entity-chunk edges (as index pairs) of the bounded, filtered neighbourhood.

    Seeds are expanded unless they are hubs (``max_seed_fanout``): a hub seed is only linked to the chunks the other
    seeds reached (when all seeds are hubs, the most specific one is expanded). Entities reached later are skipped
    when they mention more than ``max_fanout`` chunks. Specific (low-degree) entities are expanded first, so the
    ``max_nodes`` cap cuts the least informative part.
    """
    walk = _Walk(adj, degree, chunk_ok, params)
    frontier = sorted(seeds, key=degree)
    for e in frontier:
        walk.add(e)
    hubs = [e for e in frontier if degree(e) > params.max_seed_fanout]
    if len(hubs) < len(frontier):
        frontier = frontier[: len(frontier) - len(hubs)]  # sorted by degree: the hubs are the tail
    else:
        hubs, frontier = hubs[1:], hubs[:1]  # only hubs: expand the most specific one (capped by max_nodes)
    for hop in range(params.hops):
        new_chunks = walk.chunks_of(frontier, expand_hubs=hop == 0, deadline=deadline)
        if hop == params.hops - 1 or time.monotonic() > deadline:
            break  # the last layer's chunks already have their edges to the entities that reached them
        frontier = walk.entities_of(new_chunks)
    for h in hubs:  # a hub seed joins the chunks already reached instead of flooding the walk
        hi = walk.index[h]
        walk.edges.extend((hi, walk.index[c]) for c in walk.nodes if c[0] == CHUNK[0] and h in adj[c])
    return walk.nodes, walk.edges


def personalized_pagerank(
    n: int, edges: list[tuple[int, int]], personalization: np.ndarray, params: PPRParams, deadline: float
) -> np.ndarray:
    """Stationary distribution of a random walk on the undirected graph that restarts to ``personalization``."""
    if not edges:
        return personalization.copy()
    pairs = np.asarray(edges, dtype=np.int64)
    rows = np.concatenate([pairs[:, 0], pairs[:, 1]])
    cols = np.concatenate([pairs[:, 1], pairs[:, 0]])
    adj = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(n, n))
    adj.data[:] = 1.0  # duplicate edges were summed: an edge is an edge
    degree = np.asarray(adj.sum(axis=1)).ravel()
    inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
    transition = adj.multiply(inv[np.newaxis, :]).tocsr()  # column-stochastic (dangling columns are zero)
    p = personalization / personalization.sum()
    r = p.copy()
    for _ in range(params.max_iter):
        nxt = params.damping * (transition @ r)
        nxt += (1.0 - nxt.sum()) * p  # restart mass, including what dangling nodes lost
        delta = float(np.abs(nxt - r).sum())
        r = nxt
        if delta < params.tol or time.monotonic() > deadline:
            break
    return r
