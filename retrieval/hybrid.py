"""Hybrid retrieval: keyword + vector + graph in parallel, fusion (``retrieval.fusion``), optional rerank.

Each retriever runs in a bounded thread pool under its own timeout. A retriever that raises or times out is skipped
and named in ``RetrievalResult.degraded``; the query still answers from the others. Only when every configured
(non-null) retriever fails does :meth:`HybridRetriever.retrieve` raise ``AppError(INDEX_UNAVAILABLE)``.

Python cannot kill a thread, so a timed-out call keeps its worker until it returns. To keep a stuck backend from
eating the whole pool, a stage with ``max_abandoned`` calls still running after their timeout is skipped at once
(no new work is submitted for it) until those calls finish.

With ``sentence_weight`` > 0 and a chunk store that keeps sentence vectors (``DbChunkStore.sentence_vectors``), the
vector list is re-scored by each candidate's best sentence (:func:`retrieval.sentences.rescore`) before fusion; the
chunks keep their plain cosine as ``scores["vector"]`` (what the answerability model is calibrated on) and the best
sentence's as ``scores["sentence"]``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from core.errors import AppError, ErrorCode
from core.settings import RetrievalSettings
from core.types import ChunkRecord, Hit, RankedChunk, SearchFilter
from retrieval.fusion import FusedHit, fuse
from retrieval.null import is_disabled
from retrieval.protocols import ChunkStore, Embedder, GraphIndex, KeywordIndex, Reranker, RetrievalResult, VectorIndex
from retrieval.sentences import SentenceHit, rescore, unpack

log = logging.getLogger(__name__)

STAGES = ("keyword", "vector", "graph")
_NAME = re.compile(r"\b[A-Z][\w'-]*(?:\s+(?:of|the|de|von|van|[A-Z][\w'-]*))*")
_MAX_BRIDGES = 4


def bridge_names(query: str, chunk: ChunkRecord) -> list[str]:
    """Names a first-hop passage adds to the question: its title, then capitalised phrases of its text whose words
    the question does not already hold (at most a few, in order of appearance)."""
    known = {w.lower() for w in re.findall(r"\w+", query)}
    out: list[str] = []
    for cand in ([chunk.title] if chunk.title else []) + _NAME.findall(chunk.text):
        cand = cand.strip()
        words = {w.lower() for w in re.findall(r"\w+", cand)}
        if not words or words <= known or cand in out:
            continue
        out.append(cand)
        if len(out) >= _MAX_BRIDGES:
            break
    return out


_QUALIFIER = re.compile(r"\s*\([^)]*\)\s*$")


def link_name(title: str) -> str:
    """The name a passage uses for a document: its title without a trailing "(...)" qualifier, lower-cased; empty
    when too short or without letters to be told apart from ordinary words."""
    name = _QUALIFIER.sub("", title).strip().lower()
    return name if len(name) >= 3 and any(ch.isalpha() for ch in name) else ""


def linked_after(order: list[str], records: Mapping[str, ChunkRecord], seeds: int, per_seed: int) -> list[str]:
    """Title links: each of the first ``seeds`` ids of ``order`` whose passage names another document's title
    (:func:`link_name`, whole words, any case) pulls the best-ranked chunk of up to ``per_seed`` such documents
    from further down ``order`` to right after it. Ids without a record stay where they are; the seed's own document
    and documents titled like it are never linked."""
    out = list(order)
    patterns: dict[str, re.Pattern[str] | None] = {}

    def pattern(name: str) -> re.Pattern[str] | None:
        if name not in patterns:
            patterns[name] = re.compile(r"(?<!\w)" + re.escape(name) + r"(?!\w)") if name else None
        return patterns[name]

    for seed_id in order[:seeds]:
        seed = records.get(seed_id)
        if seed is None:
            continue
        body, seed_name = seed.text.lower(), link_name(seed.title)
        at = out.index(seed_id)
        above = set(out[: at + 1])
        picked: list[str] = []
        docs = {seed.document_id}
        for cid in order:
            rec = records.get(cid)
            if cid in above or rec is None or rec.document_id in docs:
                continue
            name = link_name(rec.title)
            if not name or name == seed_name or name not in body:  # the substring test first: most titles fail it
                continue
            pat = pattern(name)
            if pat is not None and pat.search(body):
                picked.append(cid)
                docs.add(rec.document_id)
                if len(picked) >= per_seed:
                    break
        for cid in reversed(picked):
            out.remove(cid)
            out.insert(at + 1, cid)
    return out


def _monotone(hits: list[FusedHit]) -> list[FusedHit]:
    """Keep fused scores non-increasing down an order that a hop changed."""
    for i in range(len(hits) - 2, -1, -1):
        hits[i].score = max(hits[i].score, hits[i + 1].score)
    return hits


def passage_text(chunk: ChunkRecord) -> str:
    """The text a reranker sees for a chunk: title (when any) then body."""
    return f"{chunk.title}\n{chunk.text}" if chunk.title else chunk.text


def _z(values: list[float]) -> list[float]:
    n = len(values)
    mean = sum(values) / n
    std = (sum((v - mean) ** 2 for v in values) / n) ** 0.5
    return [(v - mean) / std if std > 1e-12 else 0.0 for v in values]


def blend(rerank: list[float], fused: list[float], fused_weight: float) -> list[float]:
    """A reranked chunk's final score: the reranker's own score when ``fused_weight`` is 0, else
    z(rerank) + fused_weight x z(fused), both z-normalised over the re-scored chunks."""
    if fused_weight <= 0 or not rerank:
        return list(rerank)
    return [r + fused_weight * f for r, f in zip(_z(rerank), _z(fused), strict=True)]


@dataclass(slots=True)
class _Stage:
    name: str
    run: Callable[[str, SearchFilter, int], list[Hit]]
    enabled: bool
    timeout_s: float


class HybridRetriever:
    """Implements :class:`retrieval.protocols.Retriever` over three indexes (any of them may be a null index)."""

    def __init__(
        self,
        keyword: KeywordIndex,
        vector: VectorIndex,
        graph: GraphIndex,
        embedder: Embedder,
        store: ChunkStore,
        settings: RetrievalSettings,
        reranker: Reranker | None = None,
        *,
        timeouts_s: Mapping[str, float] | None = None,
        rerank_candidates: int | None = None,
        max_workers: int = 8,
        max_abandoned: int = 2,
    ) -> None:
        timeouts = dict(timeouts_s or {})
        self._settings = settings
        self._store = store
        self._reranker = reranker
        self._rerank_candidates = rerank_candidates or settings.rerank_candidates
        self._rerank_timeout_s = timeouts.get("rerank", settings.timeout_s)
        self._weights = {
            "keyword": settings.weight_keyword,
            "vector": settings.weight_vector,
            "graph": settings.weight_graph,
        }

        stored: Callable[[list[str]], Mapping[str, bytes]] | None = getattr(store, "sentence_vectors", None)
        sentence_weight = settings.sentence_weight if stored is not None else 0.0

        def vector_search(query: str, flt: SearchFilter, k: int) -> list[Hit]:
            q = embedder.embed_query(query)
            hits = vector.search(q, flt, k)
            if sentence_weight <= 0 or not hits or stored is None:
                return hits
            blobs = stored([h.chunk_id for h in hits])
            if not blobs:
                return hits
            return rescore(hits, q, lambda cid: unpack(blobs[cid], vector.dim) if cid in blobs else None,
                           sentence_weight)

        def disabled(query: str, flt: SearchFilter, k: int) -> list[Hit]:
            return []  # a disabled vector index must not cost a query embedding

        runs: dict[str, tuple[Callable[[str, SearchFilter, int], list[Hit]], object]] = {
            "keyword": (keyword.search, keyword),
            "vector": (disabled if is_disabled(vector) else vector_search, vector),
            "graph": (graph.search, graph),
        }
        self._stages = [
            _Stage(name, fn, not is_disabled(index), timeouts.get(name, settings.timeout_s))
            for name, (fn, index) in runs.items()
        ]
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="kbqa-retrieve")
        self._max_abandoned = max_abandoned
        self._abandoned: dict[str, int] = {}
        self._lock = threading.Lock()

    # -- thread-pool plumbing -------------------------------------------------------------------------------------

    def _backlogged(self, name: str) -> bool:
        with self._lock:
            return self._abandoned.get(name, 0) >= self._max_abandoned

    def _abandon(self, name: str, cfut: Future[object]) -> None:
        with self._lock:
            self._abandoned[name] = self._abandoned.get(name, 0) + 1

        def release(_: Future[object]) -> None:
            with self._lock:
                self._abandoned[name] -= 1

        cfut.add_done_callback(release)

    async def _call(
        self, name: str, timeout_s: float, fn: Callable[..., object], *args: object
    ) -> tuple[object, float]:
        """Run ``fn(*args)`` in the pool under ``timeout_s``; return (result, elapsed ms). Raises on failure/timeout."""
        if self._backlogged(name):
            raise TimeoutError(f"{name}: earlier calls are still running past their timeout")
        start = time.perf_counter()
        cfut = self._pool.submit(fn, *args)
        try:
            result = await asyncio.wait_for(asyncio.wrap_future(cfut), timeout_s)
        except (TimeoutError, asyncio.CancelledError):
            if not cfut.cancel():  # already running: cannot be stopped, count it until it returns
                self._abandon(name, cfut)
            raise
        return result, (time.perf_counter() - start) * 1000.0

    async def _run_stage(self, stage: _Stage, query: str, flt: SearchFilter, k: int) -> tuple[list[Hit] | None, float]:
        start = time.perf_counter()
        try:
            hits, ms = await self._call(stage.name, stage.timeout_s, stage.run, query, flt, k)
            return list(hits), ms  # type: ignore[call-overload]
        except TimeoutError:
            log.warning("retriever %s timed out after %.2fs; skipped", stage.name, stage.timeout_s)
        except Exception:  # noqa: BLE001 - any retriever failure degrades, never fails the query
            log.exception("retriever %s failed; skipped", stage.name)
        return None, (time.perf_counter() - start) * 1000.0

    # -- the Retriever protocol -----------------------------------------------------------------------------------

    async def retrieve(self, query: str, flt: SearchFilter, top_k: int) -> RetrievalResult:
        t0 = time.perf_counter()
        k = max(self._settings.candidates, top_k)
        outcomes = await asyncio.gather(*(self._run_stage(s, query, flt, k) for s in self._stages))
        degraded: list[str] = []
        timings: dict[str, float] = {}
        lists: dict[str, list[Hit]] = {}
        for stage, (hits, ms) in zip(self._stages, outcomes, strict=True):
            if stage.enabled:  # a null index is not a retriever: no timing for it
                timings[stage.name] = ms
            if hits is None:
                degraded.append(stage.name)
            else:
                lists[stage.name] = hits
        if not any(s.enabled and s.name in lists for s in self._stages):
            raise AppError(
                ErrorCode.INDEX_UNAVAILABLE,
                "every retriever failed or timed out",
                details={"degraded": degraded},
            )

        t = time.perf_counter()
        n_keep = max(top_k, self._rerank_candidates if self._reranker is not None else top_k)
        fused = fuse(lists, method=self._settings.fusion, weights=self._weights, k=self._settings.rrf_k)
        if self._settings.multi_hop and fused:
            fused = await self._second_hop(query, flt, k, lists, fused, degraded, timings)
        known: dict[str, ChunkRecord] = {}
        if self._settings.title_links and fused:
            t_links = time.perf_counter()
            fused, known = await self._title_links(fused, flt)
            timings["links"] = (time.perf_counter() - t_links) * 1000.0
        chunks: list[RankedChunk] = []
        start = 0
        while len(chunks) < n_keep and start < len(fused):  # one round unless ids vanished from the store
            window = fused[start : start + n_keep - len(chunks)]
            chunks += await self._load(window, flt, first_rank=start + 1, known=known)
            start += len(window)
        timings["fuse"] = (time.perf_counter() - t) * 1000.0
        by_sentence = {h.chunk_id: h for h in lists.get("vector", ()) if isinstance(h, SentenceHit)}
        for rc in chunks if by_sentence else ():
            if (sh := by_sentence.get(rc.chunk.id)) is not None:
                rc.scores["vector"], rc.scores["sentence"] = sh.cosine, sh.sentence

        if self._reranker is not None and chunks:
            t = time.perf_counter()
            reranked = await self._rerank(query, chunks)
            timings["rerank"] = (time.perf_counter() - t) * 1000.0
            if reranked is None:
                degraded.append("rerank")
            else:
                chunks = reranked
        timings["total"] = (time.perf_counter() - t0) * 1000.0
        return RetrievalResult(chunks=chunks[:top_k], degraded=degraded, timings_ms=timings)

    async def _second_hop(
        self, query: str, flt: SearchFilter, k: int, lists: dict[str, list[Hit]], fused: list[FusedHit],
        degraded: list[str], timings: dict[str, float],
    ) -> list[FusedHit]:
        """Multi-hop: the names each top first-hop passage adds to the question (:func:`bridge_names`) are a second
        query, run on every stage and fused; its best passage not already ranked above is placed right after the
        passage that named it (the pair a two-hop question needs). A failed second-hop stage is named
        ``<stage>@2`` in ``degraded``; the first hop's ranking is kept either way."""
        t = time.perf_counter()
        seeds = await self._load(fused[: self._settings.hop_seeds], flt, first_rank=1)
        hops = [(c.chunk.id, " ".join(names)) for c in seeds if (names := bridge_names(query, c.chunk))]
        enabled = [s for s in self._stages if s.enabled and s.name in lists]
        outcomes = await asyncio.gather(*(self._run_stage(s, q, flt, k) for _, q in hops for s in enabled))
        order = [f.chunk_id for f in fused]
        by_id = {f.chunk_id: f for f in fused}
        for n, (seed_id, _) in enumerate(hops):
            hop_lists: dict[str, list[Hit]] = {}
            for m, stage in enumerate(enabled):
                hits = outcomes[n * len(enabled) + m][0]
                if hits is None:
                    if f"{stage.name}@2" not in degraded:
                        degraded.append(f"{stage.name}@2")
                    continue
                hop_lists[stage.name] = hits
            second = fuse(hop_lists, method=self._settings.fusion, weights=self._weights, k=self._settings.rrf_k)
            at = order.index(seed_id)
            pick = next((f for f in second if f.chunk_id not in order[: at + 1]), None)
            if pick is None:
                continue
            hop = by_id.setdefault(pick.chunk_id, FusedHit(pick.chunk_id, 0.0))
            for name, score in pick.scores.items():
                hop.scores[f"{name}@2"] = score
                hop.ranks[f"{name}@2"] = pick.ranks[name]
            if pick.chunk_id in order:
                order.remove(pick.chunk_id)
            order.insert(at + 1, pick.chunk_id)
        timings["hop2"] = (time.perf_counter() - t) * 1000.0
        return _monotone([by_id[i] for i in order])

    async def _title_links(
        self, fused: list[FusedHit], flt: SearchFilter
    ) -> tuple[list[FusedHit], dict[str, ChunkRecord]]:
        """Reorder the top ``candidates`` fused hits by :func:`linked_after` (only records the filter admits take
        part); return them with the records read, which :meth:`_load` reuses and checks again."""
        head = fused[: max(self._settings.candidates, self._settings.link_seeds + 1)]
        records = {i: r for i, r in (await self._records([f.chunk_id for f in head])).items() if flt.admits(r)}
        by_id = {f.chunk_id: f for f in head}
        order = linked_after(list(by_id), records, self._settings.link_seeds, self._settings.link_per_seed)
        return _monotone([by_id[i] for i in order]) + fused[len(head):], records

    async def _records(self, ids: list[str]) -> dict[str, ChunkRecord]:
        try:
            records, _ = await self._call("store", self._settings.timeout_s, self._store.get_many, ids)
        except AppError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"chunk store lookup failed: {exc!r}") from exc
        assert isinstance(records, dict)
        return records

    async def _load(
        self, fused: list[FusedHit], flt: SearchFilter, first_rank: int, known: Mapping[str, ChunkRecord] | None = None
    ) -> list[RankedChunk]:
        known = known or {}
        missing = [f.chunk_id for f in fused if f.chunk_id not in known]
        records = {**known, **(await self._records(missing) if missing else {})}
        out: list[RankedChunk] = []
        for rank, f in enumerate(fused, start=first_rank):
            chunk = records.get(f.chunk_id)
            if chunk is None:  # deleted between index read and store read
                continue
            if not flt.admits(chunk):  # an index leaked a row its filter should have removed: a defect, never shown
                log.error("index returned chunk %s that the filter does not admit; dropped", f.chunk_id)
                continue
            out.append(RankedChunk(chunk=chunk, score=f.score, scores={**f.scores, "fused": f.score},
                                   ranks={**f.ranks, "fused": rank}))
        return out

    async def _rerank(self, query: str, chunks: list[RankedChunk]) -> list[RankedChunk] | None:
        assert self._reranker is not None
        head = chunks[: self._rerank_candidates]
        try:
            scores, _ = await self._call(
                "rerank", self._rerank_timeout_s, self._reranker.score, query, [passage_text(c.chunk) for c in head]
            )
            scores = [float(s) for s in scores]  # type: ignore[attr-defined]
            if len(scores) != len(head):
                raise ValueError(f"reranker returned {len(scores)} scores for {len(head)} passages")
        except Exception:  # noqa: BLE001 - a reranker failure keeps the fused order
            log.exception("reranker failed; keeping fused order")
            return None
        final = blend(scores, [c.score for c in head], float(getattr(self._reranker, "fused_weight", 0.0)))
        for c, s, f in zip(head, scores, final, strict=True):
            c.scores["rerank"] = s
            c.score = f
        head.sort(key=lambda c: (-c.score, c.ranks["fused"]))
        for rank, c in enumerate(head, start=1):
            c.ranks["rerank"] = rank
        return head + chunks[len(head):]

    def close(self) -> None:
        """Release the worker threads (calls still running past their timeout finish in the background)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
