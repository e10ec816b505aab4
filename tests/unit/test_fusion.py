"""Weighted reciprocal-rank fusion."""

from __future__ import annotations

import pytest

from core.types import Hit
from retrieval.fusion import FUSION_METHODS, fuse, list_confidence, reciprocal_rank_fusion

pytestmark = pytest.mark.unit


def hits(*ids: str) -> list[Hit]:
    return [Hit(i, 10.0 - n) for n, i in enumerate(ids)]


def test_scores_are_weighted_reciprocal_ranks() -> None:
    fused = reciprocal_rank_fusion(
        {"keyword": hits("a", "b"), "vector": hits("b", "c")}, weights={"keyword": 1.0, "vector": 2.0}, k=10
    )
    by_id = {f.chunk_id: f for f in fused}
    assert by_id["a"].score == pytest.approx(1 / 11)
    assert by_id["b"].score == pytest.approx(1 / 12 + 2 / 11)
    assert by_id["c"].score == pytest.approx(2 / 12)
    assert [f.chunk_id for f in fused] == ["b", "c", "a"]


def test_keeps_per_retriever_scores_and_ranks() -> None:
    fused = reciprocal_rank_fusion({"keyword": [Hit("a", 7.5), Hit("b", 3.0)], "graph": [Hit("b", 0.2)]})
    b = next(f for f in fused if f.chunk_id == "b")
    assert b.scores == {"keyword": 3.0, "graph": 0.2}
    assert b.ranks == {"keyword": 2, "graph": 1}
    a = next(f for f in fused if f.chunk_id == "a")
    assert a.ranks == {"keyword": 1}


def test_zero_weight_keeps_debug_info_but_no_influence() -> None:
    fused = reciprocal_rank_fusion({"keyword": hits("a", "b"), "graph": hits("b")}, weights={"graph": 0.0}, k=60)
    assert [f.chunk_id for f in fused] == ["a", "b"]
    assert fused[1].ranks["graph"] == 1


def test_duplicate_in_one_list_counts_once_at_best_rank() -> None:
    fused = reciprocal_rank_fusion({"keyword": hits("a", "a", "b")}, k=1)
    by_id = {f.chunk_id: f for f in fused}
    assert by_id["a"].score == pytest.approx(1 / 2)
    assert by_id["b"].ranks["keyword"] == 2


def test_missing_weight_defaults_to_one_and_limit_truncates() -> None:
    fused = reciprocal_rank_fusion({"x": hits("a", "b", "c")}, weights={"other": 5.0}, k=1, limit=2)
    assert [f.chunk_id for f in fused] == ["a", "b"]
    assert fused[0].score == pytest.approx(0.5)


def test_ties_break_by_best_rank_then_id() -> None:
    # "a" and "b" are each 1st in one list and 2nd in the other: same score and same best rank
    fused = reciprocal_rank_fusion({"x": hits("b", "a"), "y": hits("a", "b")}, k=60)
    assert [f.chunk_id for f in fused] == ["a", "b"]  # equal scores, equal best rank -> id order


def test_empty_and_invalid_inputs() -> None:
    assert reciprocal_rank_fusion({}) == []
    assert reciprocal_rank_fusion({"x": []}) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": hits("a")}, k=0)
    with pytest.raises(ValueError):
        reciprocal_rank_fusion({"x": hits("a")}, weights={"x": -1.0})


# ------------------------------------------------------------------ score-aware and query-adaptive fusion (fuse)

def _toy_set() -> tuple[dict[str, dict[str, list[Hit]]], dict[str, dict[str, int]]]:
    """Two queries with known rankings. In q1 BM25 is sure and right (one hit far above the rest) and the dense list
    is flat and wrong at the top; in q2 the roles swap. The flat list's top hit also sits at rank 2 of the sure list,
    which is what drags plain RRF below the better member."""
    def peaked(ids: list[str]) -> list[Hit]:
        return [Hit(ids[0], 10.0)] + [Hit(i, 2.0 - 0.05 * n) for n, i in enumerate(ids[1:])]

    def flat(ids: list[str]) -> list[Hit]:
        return [Hit(i, 0.50 - 0.002 * n) for n, i in enumerate(ids)]

    sure = ["rel", "x1", *(f"s{i}" for i in range(28))]
    unsure = ["x1", *(f"u{i}" for i in range(6)), "rel", *(f"u{i}" for i in range(7, 29))]
    runs = {
        "q1": {"keyword": peaked([c.replace("rel", "rel1") for c in sure]),
               "vector": flat([c.replace("rel", "rel1") for c in unsure])},
        "q2": {"keyword": flat([c.replace("rel", "rel2").replace("x1", "y1") for c in unsure]),
               "vector": peaked([c.replace("rel", "rel2").replace("x1", "y1") for c in sure])},
    }
    return runs, {"q1": {"rel1": 1}, "q2": {"rel2": 1}}


def _mean_ndcg(ranked: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    from evaluation.metrics import ndcg_at_k

    return sum(ndcg_at_k(ranked[q], qrels[q], 10) for q in qrels) / len(qrels)


@pytest.mark.parametrize("method", ["zscore", "adaptive-zscore"])
def test_score_aware_fusion_never_loses_to_its_best_member_on_the_toy_set(method: str) -> None:
    runs, qrels = _toy_set()
    members = {name: _mean_ndcg({q: [h.chunk_id for h in r[name]] for q, r in runs.items()}, qrels)
               for name in ("keyword", "vector")}
    fused = _mean_ndcg({q: [f.chunk_id for f in fuse(r, method=method)] for q, r in runs.items()}, qrels)
    plain = _mean_ndcg({q: [f.chunk_id for f in fuse(r, method="rrf")] for q, r in runs.items()}, qrels)
    assert plain < max(members.values())  # the toy set is one where rank-only fusion does lose
    assert fused >= max(members.values())
    assert fused == pytest.approx(1.0)  # each query's sure retriever wins


def test_rank_only_adaptive_weights_are_not_enough_on_the_toy_set() -> None:
    """Why the score-aware methods: per-query weights on ranks alone still put the shared wrong hit first."""
    runs, qrels = _toy_set()
    members = max(_mean_ndcg({q: [h.chunk_id for h in r[name]] for q, r in runs.items()}, qrels)
                  for name in ("keyword", "vector"))
    assert _mean_ndcg({q: [f.chunk_id for f in fuse(r, method="adaptive-rrf")] for q, r in runs.items()}, qrels) \
        < members


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_every_method_keeps_a_lone_list_and_identical_lists_in_order(method: str) -> None:
    one = [Hit("a", 3.0), Hit("b", 2.5), Hit("c", 0.1), Hit("d", 0.05)]
    assert [f.chunk_id for f in fuse({"keyword": one, "vector": []}, method=method)] == ["a", "b", "c", "d"]
    assert [f.chunk_id for f in fuse({"keyword": one, "vector": [Hit("z", 1.0)]}, method=method,
                                     weights={"vector": 0.0})][:4] == ["a", "b", "c", "d"]
    same = [Hit(h.chunk_id, h.score / 10) for h in one]
    assert [f.chunk_id for f in fuse({"keyword": one, "vector": same}, method=method)] == ["a", "b", "c", "d"]


@pytest.mark.parametrize("method", FUSION_METHODS)
def test_every_method_keeps_per_retriever_scores_and_ranks(method: str) -> None:
    fused = fuse({"keyword": [Hit("a", 7.5), Hit("b", 3.0), Hit("a", 1.0)], "vector": [Hit("b", 0.9)]}, method=method)
    b = next(f for f in fused if f.chunk_id == "b")
    assert b.scores == {"keyword": 3.0, "vector": 0.9} and b.ranks == {"keyword": 2, "vector": 1}
    assert sorted(f.chunk_id for f in fused) == ["a", "b"]


def test_fuse_rejects_unknown_methods_and_negative_weights() -> None:
    with pytest.raises(ValueError, match="unknown fusion method"):
        fuse({"keyword": hits("a")}, method="borda")
    with pytest.raises(ValueError, match=">= 0"):
        fuse({"keyword": hits("a")}, method="adaptive-zscore", weights={"keyword": -1.0})


def test_list_confidence_prefers_peaked_lists() -> None:
    assert list_confidence([10.0, 2.0, 1.9, 1.8, 1.7, 1.6, 1.5, 1.4, 1.3, 1.2, 1.1, 1.0]) > \
        list_confidence([0.50, 0.49, 0.48, 0.47, 0.46, 0.45, 0.44, 0.43, 0.42, 0.41, 0.40, 0.39])
    assert list_confidence([1.0, 1.0, 1.0]) == 0.0
    assert list_confidence([1.0, 0.5]) == 0.0
