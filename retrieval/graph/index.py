"""``NetworkXGraphIndex``: the embedded :class:`~retrieval.protocols.GraphIndex` (one networkx graph per tenant).

Concurrency (lock with swap): each tenant graph has a lock. A writer applies a document edit in place while holding
it (milliseconds: one document's nodes and edges) and appends the edit to the journal; a search holds it while it walks
the graph (bounded by ``timeout_s``). A reload after another process wrote builds a fresh graph *without* the lock and
swaps the reference in under it, so readers keep using the old graph object meanwhile and never see a mix.

Search links the query to entities (exact normalised n-grams, plus the names a ``query_extractor`` such as
``ingestion.entities.EntityExtractor`` finds; as a fallback, names sharing words with the query, words corrected for
typos with rapidfuzz when it is installed), weights each seed by
specificity ``1 / log(1 + degree)``, runs personalised PageRank on the filtered neighbourhood and ranks chunk nodes.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter
from retrieval.graph import persist
from retrieval.graph.normalize import content_tokens, normalize_entity, query_ngrams
from retrieval.graph.ppr import PPRParams, neighbourhood, personalized_pagerank
from retrieval.graph.store import CHUNK, ENTITY, TenantGraph

#: Turns texts into lists of entity names (``EntityExtractor.extract`` has this shape).
QueryExtractor = Callable[[Sequence[str]], list[list[str]]]

#: Weight of a seed found only by partial (token) matching, relative to an exact match.
PARTIAL_WEIGHT = 0.5
#: Partial matching ignores a query word that occurs in more entity names than this.
MAX_PARTIAL_KEYS = 2_000
#: Typo correction: minimum rapidfuzz ratio, and shortest word worth correcting.
TYPO_MIN_SCORE, TYPO_MIN_LEN = 85.0, 5


def _typo_fixes(tokens: set[str], vocabulary: dict[str, set[str]]) -> set[str]:
    """Entity-name words close to query words that are not in any name (``kestral`` -> ``kestrel``)."""
    unknown = [t for t in tokens if t not in vocabulary and len(t) >= TYPO_MIN_LEN and t.isalpha()]
    if not unknown:
        return set()
    try:
        from rapidfuzz import fuzz, process
    except ImportError:  # optional: without it, no typo correction
        return set()
    fixes = set()
    for tok in unknown:
        match = process.extractOne(tok, vocabulary.keys(), scorer=fuzz.ratio, score_cutoff=TYPO_MIN_SCORE)
        if match is not None:
            fixes.add(match[0])
    return fixes


class _Tenant:
    __slots__ = ("folder", "lock", "graph", "mark", "pending")

    def __init__(self, folder: Path, graph: TenantGraph, mark: persist.DiskMark) -> None:
        self.folder = folder
        self.lock = threading.RLock()
        self.graph = graph
        self.mark = mark
        self.pending = 0  # journal records since the last snapshot


class NetworkXGraphIndex:
    """Knowledge-graph index persisted under ``root`` (see :mod:`retrieval.graph.persist` for the layout)."""

    name = "graph"

    def __init__(
        self,
        root: Path,
        *,
        query_extractor: QueryExtractor | None = None,
        ppr: PPRParams | None = None,
        timeout_s: float = 0.5,
        max_seeds: int = 16,
        max_cooc_entities: int = 16,
        compact_every: int = 500,
    ) -> None:
        self.root = Path(root)
        self.query_extractor = query_extractor
        self.ppr = ppr or PPRParams()
        self.timeout_s = timeout_s
        self.max_seeds = max_seeds
        self.max_cooc_entities = max_cooc_entities
        self.compact_every = compact_every
        self._tenants: dict[str, _Tenant] = {}
        self._doc_tenant: dict[str, str] = {}
        self._lock = threading.Lock()
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._scan()
        except (OSError, ValueError) as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"cannot open graph index: {exc}") from exc

    # ------------------------------------------------------------ tenants
    def _scan(self) -> None:
        for marker in sorted(self.root.glob(f"*/{persist.TENANT}")):
            tenant_id = marker.read_text(encoding="utf-8")
            if tenant_id not in self._tenants:
                self._open(tenant_id)

    def _open(self, tenant_id: str) -> _Tenant:
        with self._lock:
            t = self._tenants.get(tenant_id)
            if t is None:
                folder = persist.tenant_dir(self.root, tenant_id)
                persist.ensure_folder(folder, tenant_id)
                graph, mark, replayed = persist.load(folder, tenant_id, max_cooc_entities=self.max_cooc_entities)
                t = self._tenants[tenant_id] = _Tenant(folder, graph, mark)
                t.pending = replayed
                for doc in graph.docs:
                    self._doc_tenant[doc] = tenant_id
            return t

    def _refresh(self, t: _Tenant) -> None:
        """Pick up another process's writes: replay new journal records, or reload and swap after a compaction."""
        if not persist.changed(t.folder, t.mark):
            return
        journal_size = persist.journal_size(t.folder)
        snapshot_moved = persist.snapshot_id(t.folder) != t.mark.snapshot or journal_size < t.mark.journal_offset
        if snapshot_moved:
            graph, mark, _ = persist.load(t.folder, t.graph.tenant_id, max_cooc_entities=self.max_cooc_entities)
            with t.lock:
                t.graph, t.mark = graph, mark
        else:
            with t.lock:
                records, offset = persist.read_records(t.folder, t.mark.journal_offset)
                for rec in records:
                    persist.apply_record(t.graph, rec)
                t.mark = persist.DiskMark(t.mark.snapshot, offset)
        for doc in t.graph.docs:
            self._doc_tenant[doc] = t.graph.tenant_id

    # ------------------------------------------------------------- writes
    def upsert_document(
        self, document_id: str, chunks: Sequence[ChunkRecord], entities: Sequence[Sequence[str]]
    ) -> None:
        if len(chunks) != len(entities):
            raise AppError(ErrorCode.VALIDATION, "entities must have one list per chunk")
        tenants = {c.tenant_id for c in chunks}
        if len(tenants) > 1:
            raise AppError(ErrorCode.VALIDATION, "all chunks of a document must belong to one tenant")
        owner = self._doc_tenant.get(document_id)
        if owner is not None and owner not in tenants:
            self.delete_document(document_id)
        if not chunks:
            self.delete_document(document_id)
            return
        light = [dataclasses.replace(c, text="", title="") for c in chunks]
        names = [list(e) for e in entities]
        self._write(tenants.pop(), ("upsert", document_id, light, names))

    def delete_document(self, document_id: str) -> None:
        tenant_id = self._doc_tenant.get(document_id)
        if tenant_id is None:
            self._scan()
            for t in list(self._tenants.values()):
                self._refresh(t)
            tenant_id = self._doc_tenant.get(document_id)
            if tenant_id is None:
                return
        self._write(tenant_id, ("delete", document_id))

    def _write(self, tenant_id: str, record: tuple[object, ...]) -> None:
        t = self._open(tenant_id)
        try:
            with persist.writer_lock(t.folder):  # one writing process at a time per tenant, compaction included
                self._refresh(t)
                with t.lock:
                    persist.apply_record(t.graph, record)
                    t.mark.journal_offset = persist.append_record(t.folder, record)
                    t.pending += 1
                    if record[0] == "upsert":
                        self._doc_tenant[str(record[1])] = tenant_id
                    else:
                        self._doc_tenant.pop(str(record[1]), None)
                    if t.pending >= self.compact_every:
                        t.mark = persist.write_snapshot(t.folder, t.graph)
                        t.pending = 0
        except OSError as exc:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"graph index write failed: {exc}") from exc

    def _compact(self, t: _Tenant) -> None:
        with persist.writer_lock(t.folder):
            self._refresh(t)  # never snapshot a stale graph over another process's newer records
            with t.lock:
                t.mark = persist.write_snapshot(t.folder, t.graph)
                t.pending = 0

    def flush(self) -> None:
        """Write a snapshot of every tenant with journal records not yet in one (also done by ``close``)."""
        for t in list(self._tenants.values()):
            if t.pending:
                self._compact(t)

    def close(self) -> None:
        self.flush()

    # -------------------------------------------------------------- reads
    def count(self, tenant_id: str | None = None) -> int:
        """Chunks in the index (of one tenant, or all), including other processes' writes."""
        self._scan()
        tenants = [self._tenants[tenant_id]] if tenant_id in self._tenants else []
        if tenant_id is None:
            tenants = list(self._tenants.values())
        for t in tenants:
            self._refresh(t)
        return sum(t.graph.chunk_count for t in tenants)

    def link(self, query: str, tenant_id: str) -> dict[str, float]:
        """Entity keys of the tenant's graph that ``query`` names, with a match weight (1 exact, <1 partial)."""
        t = self._tenants.get(tenant_id)
        if t is None:
            return {}
        candidates = self._candidates(query)
        with t.lock:
            return self._link(t.graph, query, candidates)

    def _candidates(self, query: str) -> list[str]:
        """Possible entity keys of the query: its n-grams, plus what the query extractor finds (run without locks)."""
        candidates = query_ngrams(query)
        if self.query_extractor is not None:
            # Only names the n-grams miss (longer than MAX_ENTITY_TOKENS): a span the n-grams already hold would
            # otherwise re-add lone words the linker deliberately skips.
            seen = set(candidates)
            extracted = (normalize_entity(n) for n in self.query_extractor([query])[0])
            candidates += [k for k in extracted if k and k not in seen]
        return candidates

    def _link(self, tg: TenantGraph, query: str, candidates: list[str]) -> dict[str, float]:
        g = tg.graph
        found: dict[str, float] = {}
        covered: set[str] = set()
        for key in candidates:
            if key and key not in found and (ENTITY + key) in g:
                tokens = set(key.split())
                if len(tokens) == 1 and tokens <= covered:
                    continue  # a lone word inside a longer linked name adds noise, not signal
                found[key] = 1.0
                covered |= tokens
        if found:
            return found
        query_tokens = set(content_tokens(query))
        tokens = query_tokens | _typo_fixes(query_tokens, tg.token_index)
        for tok in tokens:
            keys = tg.token_index.get(tok, ())
            if len(keys) > MAX_PARTIAL_KEYS:
                continue  # a word in thousands of names links nothing in particular
            for key in keys:
                key_tokens = set(key.split())
                overlap = len(key_tokens & tokens) / len(key_tokens)
                found[key] = max(found.get(key, 0.0), PARTIAL_WEIGHT * overlap)
        best = sorted(found.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds * 4]
        return dict(best)

    def search(self, query: str, flt: SearchFilter, k: int) -> list[Hit]:
        t = self._tenants.get(flt.tenant_id)
        if t is None:
            self._scan()
            t = self._tenants.get(flt.tenant_id)
            if t is None:
                return []
        if k <= 0:
            return []
        self._refresh(t)
        deadline = time.monotonic() + self.timeout_s
        candidates = self._candidates(query)
        with t.lock:
            tg = t.graph
            adj = tg.graph._adj  # the raw dict-of-dicts: several times faster than the view in the walk
            linked = self._link(tg, query, candidates)
            seeds: dict[str, float] = {}
            for key, match in linked.items():
                node = ENTITY + key
                degree = tg.entity_degree(node)
                if degree:
                    seeds[node] = match / math.log(1.0 + degree)
            if not seeds:
                return []
            seeds = dict(sorted(seeds.items(), key=lambda kv: (-kv[1], kv[0]))[: self.max_seeds])
            node_meta = tg.graph._node

            def chunk_ok(c: str) -> bool:
                return flt.admits(node_meta[c]["f"])

            nodes, edges = neighbourhood(adj, tg.entity_degree, seeds, chunk_ok, self.ppr, deadline)
        personal = np.zeros(len(nodes))
        for i, node in enumerate(nodes[: len(seeds)]):
            personal[i] = seeds[node]
        scores = personalized_pagerank(len(nodes), edges, personal, self.ppr, deadline)
        ranked = [(float(scores[i]), node) for i, node in enumerate(nodes) if node.startswith(CHUNK)]
        ranked = [r for r in ranked if r[0] > 0.0]
        ranked.sort(key=lambda r: (-r[0], r[1]))
        return [Hit(chunk_id=node[len(CHUNK) :], score=score) for score, node in ranked[:k]]
