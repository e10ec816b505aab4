"""Fusion of N ranked hit lists: weighted reciprocal-rank fusion (RRF), z-score fusion, query-adaptive weights.

RRF (Cormack, Clarke & Buettcher, SIGIR 2009) scores a document by ``sum_r w_r / (k + rank_r(d))`` over the lists
``r`` that contain it (ranks start at 1). It needs no score calibration between retrievers (BM25 scores, cosine
similarities and PageRank masses live on unrelated scales), but it throws away how far apart the scores are: on
SQuAD v2 paragraph retrieval it fell below BM25 alone. :func:`fuse` adds z-score fusion (each list's scores
standardised within the list, so scales no longer matter) and query-adaptive variants; the default
(``RetrievalSettings.fusion = "zscore"``) was chosen across four datasets (``evaluation/RESULTS.md``).

The fused entries keep each retriever's own score and rank, so a caller can show *why* a chunk was retrieved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from core.types import Hit

DEFAULT_RRF_K = 60


@dataclass(slots=True)
class FusedHit:
    """A chunk id with its fused score and, per retriever name, that retriever's score and 1-based rank."""

    chunk_id: str
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)


def reciprocal_rank_fusion(
    ranked_lists: Mapping[str, Sequence[Hit]],
    *,
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ``ranked_lists`` (retriever name -> hits, best first) by weighted RRF.

    - ``weights``: per retriever name; a name absent from ``weights`` gets weight 1.0. A weight of 0 keeps the
      retriever's scores/ranks on the fused entries (for debugging) but gives it no say in the order.
    - ``k``: the RRF constant (>= 1). Larger ``k`` flattens the contribution of top ranks.
    - A chunk id repeated inside one list counts once, at its best (first) rank.
    - Ties in fused score are broken by best single rank, then by chunk id, so the output is deterministic.
    - ``limit`` truncates the result (``None`` keeps all).
    """
    if k < 1:
        raise ValueError(f"RRF k must be >= 1, got {k}")
    weights = weights or {}
    fused: dict[str, FusedHit] = {}
    for name, hits in ranked_lists.items():
        w = float(weights.get(name, 1.0))
        if w < 0:
            raise ValueError(f"fusion weight for {name!r} must be >= 0, got {w}")
        rank = 0
        for hit in hits:
            entry = fused.get(hit.chunk_id)
            if entry is not None and name in entry.ranks:
                continue  # duplicate within one list: keep the first (best) occurrence
            rank += 1
            if entry is None:
                entry = fused[hit.chunk_id] = FusedHit(chunk_id=hit.chunk_id, score=0.0)
            entry.scores[name] = float(hit.score)
            entry.ranks[name] = rank
            entry.score += w / (k + rank)
    ordered = sorted(
        fused.values(),
        key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id),
    )
    return ordered if limit is None else ordered[:limit]


# ---------------------------------------------------------------------------------------------------------------
# Score-aware and query-adaptive fusion (chosen by measurement across datasets: ``python -m evaluation.lodo``)

#: Fusion methods :func:`fuse` knows. ``rrf``: weighted RRF above. ``zscore``: CombSUM of each list's z-normalised
#: scores (a chunk missing from a list gets that list's lowest z). ``adaptive-rrf`` / ``adaptive-zscore``: the same,
#: with each list's weight multiplied per query by its confidence (see :func:`list_confidence`).
FUSION_METHODS = ("rrf", "zscore", "adaptive-rrf", "adaptive-zscore")


def list_confidence(scores: Sequence[float], depth: int = 1) -> float:
    """How sure one retriever is about its top hits for this query, on a scale shared by all retrievers: the z-score
    of its mean top-``depth`` score within its whole list (>= 0; 0 for lists of fewer than 3 scores or flat ones).
    A peaked list (a few hits far above the rest) is trusted more than a flat one."""
    if len(scores) < 3:
        return 0.0
    n = len(scores)
    mean = sum(scores) / n
    std = (sum((s - mean) ** 2 for s in scores) / n) ** 0.5
    if std <= 1e-12:
        return 0.0
    head = scores[: min(depth, n)]
    return max(0.0, (sum(head) / len(head) - mean) / std)


def _zscores(scores: Sequence[float]) -> list[float]:
    n = len(scores)
    if n == 0:
        return []
    mean = sum(scores) / n
    std = (sum((s - mean) ** 2 for s in scores) / n) ** 0.5
    return [0.0 if std <= 1e-12 else (s - mean) / std for s in scores]


def _dedup(hits: Sequence[Hit]) -> list[Hit]:
    seen: set[str] = set()
    out = []
    for h in hits:
        if h.chunk_id not in seen:
            seen.add(h.chunk_id)
            out.append(h)
    return out


def fuse(
    ranked_lists: Mapping[str, Sequence[Hit]],
    *,
    method: str = "rrf",
    weights: Mapping[str, float] | None = None,
    k: int = DEFAULT_RRF_K,
    limit: int | None = None,
) -> list[FusedHit]:
    """Fuse ``ranked_lists`` with one of :data:`FUSION_METHODS` (same output shape and tie-breaking as
    :func:`reciprocal_rank_fusion`; ``weights`` and ``k`` mean the same). Properties every method keeps:

    - one non-empty list (the others empty, or weighted 0) comes back in its own order;
    - identical lists come back in that order;
    - the fused score depends only on the lists of this query, never on other queries or other tenants.
    """
    if method == "rrf":
        return reciprocal_rank_fusion(ranked_lists, weights=weights, k=k, limit=limit)
    if method not in FUSION_METHODS:
        raise ValueError(f"unknown fusion method {method!r}; choose from {list(FUSION_METHODS)}")
    if k < 1:
        raise ValueError(f"RRF k must be >= 1, got {k}")
    base = {name: float((weights or {}).get(name, 1.0)) for name in ranked_lists}
    for name, w in base.items():
        if w < 0:
            raise ValueError(f"fusion weight for {name!r} must be >= 0, got {w}")
    lists = {name: _dedup(hits) for name, hits in ranked_lists.items()}
    adaptive = method.startswith("adaptive-")
    w_eff = dict(base)
    if adaptive:
        conf = {name: list_confidence([h.score for h in hits]) for name, hits in lists.items()}
        live = [n for n, hits in lists.items() if hits and base[n] > 0]
        if live and sum(conf[n] for n in live) > 0:
            mean_conf = sum(conf[n] for n in live) / len(live)
            w_eff = {n: base[n] * (conf[n] / mean_conf if n in live else 0.0) for n in lists}
    fused: dict[str, FusedHit] = {}
    floor: dict[str, float] = {}
    for name, hits in lists.items():
        zs = _zscores([h.score for h in hits])
        floor[name] = min(zs) if zs else 0.0
        for rank, (hit, z) in enumerate(zip(hits, zs, strict=True), start=1):
            entry = fused.get(hit.chunk_id)
            if entry is None:
                entry = fused[hit.chunk_id] = FusedHit(chunk_id=hit.chunk_id, score=0.0)
            entry.scores[name] = float(hit.score)
            entry.ranks[name] = rank
            # z-scores shifted so the list's lowest hit adds a hair above a chunk the list does not hold (0)
            contrib = z - floor[name] + 1e-6 if method.endswith("zscore") else 1.0 / (k + rank)
            entry.score += w_eff[name] * contrib
    ordered = sorted(fused.values(), key=lambda f: (-f.score, min(f.ranks.values()), f.chunk_id))
    return ordered if limit is None else ordered[:limit]
