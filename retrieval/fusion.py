"""Weighted reciprocal-rank fusion (RRF) of N ranked hit lists.

RRF (Cormack, Clarke & Buettcher, SIGIR 2009) scores a document by ``sum_r w_r / (k + rank_r(d))`` over the lists
``r`` that contain it (ranks start at 1). It needs no score calibration between retrievers, which is why it is the
default here: BM25 scores, cosine similarities and PageRank masses live on unrelated scales.

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
