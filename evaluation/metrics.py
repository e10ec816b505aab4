"""Ranking metrics with BEIR / pytrec_eval (trec_eval) semantics.

- ``ndcg_at_k``: trec_eval ``ndcg_cut``: gain = relevance grade (linear, not ``2^rel - 1``), discount
  ``1 / log2(rank + 1)``; the ideal DCG is computed from *all* judged relevant documents of the query (not only the
  retrieved ones), truncated at ``k``.
- ``recall_at_k``: relevant documents in the top ``k`` divided by all relevant documents of the query.
- ``mrr_at_k``: ``1 / rank`` of the first relevant document within the top ``k`` (0 if none), as BEIR's ``mrr``.
- ``all_relevant_at_k``: 1 when *every* relevant document is in the top ``k`` (HotpotQA "both supporting
  paragraphs retrieved").

A document is relevant when its grade is > 0. Runs are given as ranked lists (best first); a document repeated in a
run counts once, at its first rank. ``mean_metrics`` averages over every query that has at least one relevant
document; a query with no run scores 0 (pytrec_eval silently drops such queries, which inflates the mean).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Qrels = Mapping[str, Mapping[str, int]]  # query id -> doc id -> grade
Run = Mapping[str, Sequence[str]]  # query id -> ranked doc ids, best first


def _dedup(ranked: Iterable[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for d in ranked:
        if d not in seen:
            seen.add(d)
            out.append(d)
    return out


def _relevant(qrel: Mapping[str, int]) -> dict[str, int]:
    return {d: g for d, g in qrel.items() if g > 0}


def ndcg_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    rel = _relevant(qrel)
    if not rel:
        return 0.0
    dcg = sum(rel.get(d, 0) / math.log2(i + 2) for i, d in enumerate(_dedup(ranked)[:k]))
    ideal = sorted(rel.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def recall_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    rel = _relevant(qrel)
    if not rel:
        return 0.0
    return sum(1 for d in _dedup(ranked)[:k] if d in rel) / len(rel)


def mrr_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    rel = _relevant(qrel)
    for i, d in enumerate(_dedup(ranked)[:k]):
        if d in rel:
            return 1.0 / (i + 1)
    return 0.0


def all_relevant_at_k(ranked: Sequence[str], qrel: Mapping[str, int], k: int) -> float:
    rel = _relevant(qrel)
    if not rel:
        return 0.0
    return 1.0 if set(rel) <= set(_dedup(ranked)[:k]) else 0.0


METRICS = {
    "ndcg": ndcg_at_k,
    "recall": recall_at_k,
    "mrr": mrr_at_k,
    "all_rel": all_relevant_at_k,
}


def mean_metrics(run: Run, qrels: Qrels, measures: Sequence[tuple[str, int]]) -> dict[str, float]:
    """Mean of each ``(metric name, k)`` in ``measures`` over the judged queries, keyed like ``"ndcg@10"``."""
    queries = [q for q, qrel in qrels.items() if _relevant(qrel)]
    out: dict[str, float] = {}
    for name, k in measures:
        fn = METRICS[name]
        vals = [fn(run.get(q, ()), qrels[q], k) for q in queries]
        out[f"{name}@{k}"] = sum(vals) / len(vals) if vals else 0.0
    return out
