"""Weighted reciprocal-rank fusion."""

from __future__ import annotations

import pytest

from core.types import Hit
from retrieval.fusion import reciprocal_rank_fusion

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
