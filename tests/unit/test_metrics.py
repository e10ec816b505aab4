"""Ranking metrics against hand-computed values (trec_eval / BEIR semantics)."""

from __future__ import annotations

import math

import pytest

from evaluation.metrics import all_relevant_at_k, mean_metrics, mrr_at_k, ndcg_at_k, recall_at_k

pytestmark = pytest.mark.unit

QREL = {"d1": 1, "d3": 1, "d9": 0}


def test_ndcg_binary_hand_computed() -> None:
    # relevant at ranks 2 and 3 of 3; ideal puts both at ranks 1 and 2
    dcg = 1 / math.log2(3) + 1 / math.log2(4)
    idcg = 1 / math.log2(2) + 1 / math.log2(3)
    assert ndcg_at_k(["d2", "d1", "d3"], QREL, 10) == pytest.approx(dcg / idcg)
    assert ndcg_at_k(["d1", "d3", "d2"], QREL, 10) == pytest.approx(1.0)


def test_ndcg_idcg_uses_all_judged_relevant_not_only_retrieved() -> None:
    # only d1 retrieved at rank 1; idcg still counts d3 -> 1 / (1 + 1/log2 3)
    assert ndcg_at_k(["d1"], QREL, 10) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_ndcg_graded_uses_linear_gain() -> None:
    qrel = {"a": 2, "b": 1}
    got = ndcg_at_k(["b", "a"], qrel, 10)
    assert got == pytest.approx((1 + 2 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_cutoff_applies() -> None:
    assert ndcg_at_k(["x", "y", "d1"], QREL, 2) == 0.0
    assert recall_at_k(["x", "d1", "d3"], QREL, 2) == pytest.approx(0.5)
    assert mrr_at_k(["x", "y", "d1"], QREL, 2) == 0.0
    assert mrr_at_k(["x", "y", "d1"], QREL, 3) == pytest.approx(1 / 3)


def test_grade_zero_is_not_relevant() -> None:
    assert mrr_at_k(["d9", "d3"], QREL, 10) == pytest.approx(0.5)
    assert recall_at_k(["d9"], QREL, 10) == 0.0


def test_duplicates_count_once() -> None:
    # a repeated id is dropped before the cut-off, so it neither scores twice nor pushes others out
    assert ndcg_at_k(["d1", "d1"], QREL, 10) == pytest.approx(ndcg_at_k(["d1"], QREL, 10))
    assert recall_at_k(["d1", "d1", "d3"], QREL, 2) == pytest.approx(1.0)


def test_all_relevant() -> None:
    assert all_relevant_at_k(["d3", "x", "d1"], QREL, 3) == 1.0
    assert all_relevant_at_k(["d3", "x", "d1"], QREL, 2) == 0.0


def test_mean_over_judged_queries_missing_run_scores_zero() -> None:
    qrels = {"q1": {"d1": 1}, "q2": {"d2": 1}, "q3": {"d3": 0}}
    run = {"q1": ["d1"]}
    out = mean_metrics(run, qrels, [("recall", 10), ("mrr", 10)])
    assert out == {"recall@10": pytest.approx(0.5), "mrr@10": pytest.approx(0.5)}
