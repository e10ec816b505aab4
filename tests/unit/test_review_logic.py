"""The review loop's pure parts: fact matching, judging a replay, the run diff, topic clustering and labels, CSV."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from app.services import analytics, review
from core.db.models import ReviewItem

pytestmark = pytest.mark.unit


def test_fact_present_ignores_case_punctuation_and_markdown():
    answer = "From *Guide*: **Unplug it** for 10 seconds, then plug it back in [1]."
    assert review.fact_present("unplug it for 10 seconds", answer)
    assert review.fact_present("Plug it back in.", answer)
    assert not review.fact_present("unplug it for 20 seconds", answer)
    assert not review.fact_present("seconds unplug", answer)  # order matters
    assert review.fact_present("", answer)


def _item(**kw) -> ReviewItem:  # noqa: ANN003
    base = dict(id="i1", question="q", expected_chunk_id=None, expected_document_id=None, expected_section=[],
                expected_facts=[], document_missing=False)
    base.update(kw)
    return ReviewItem(**base)


SOURCES = [
    {"n": 1, "chunk_id": "c1", "document_id": "d1", "title": "Guide", "section_path": ["Guide", "Offline"]},
    {"n": 2, "chunk_id": "c2", "document_id": "d2", "title": "FAQ", "section_path": ["FAQ"]},
]


def test_judge_section_and_facts():
    item = _item(expected_chunk_id="c9", expected_document_id="d1", expected_section=["Guide", "Offline"],
                 expected_facts=["restart the router"])
    good = review.AnswerReplay(answer="Restart the router [1].", outcome="answered", sources=SOURCES,
                               cited_chunk_ids=["c1"])
    r = review.judge(item, good)
    assert r["passed"] and r["section_ok"] and r["facts_ok"] and r["missing_facts"] == []
    assert r["cited_sections"] == [{"document_id": "d1", "title": "Guide", "section_path": ["Guide", "Offline"]}]
    # the section was given to the answer but not cited: fails
    uncited = review.AnswerReplay(answer="Restart the router.", outcome="answered", sources=SOURCES,
                                  cited_chunk_ids=["c2"])
    r = review.judge(item, uncited)
    assert not r["passed"] and r["section_ok"] is False and r["facts_ok"] is True
    # a fact missing fails; an error fails whatever else
    r = review.judge(item, review.AnswerReplay(answer="Call us [1].", outcome="answered", sources=SOURCES,
                                               cited_chunk_ids=["c1"]))
    assert not r["passed"] and r["missing_facts"] == ["restart the router"]
    r = review.judge(item, review.AnswerReplay(answer="Restart the router [1].", sources=SOURCES,
                                               cited_chunk_ids=["c1"], error="index_unavailable: down"))
    assert not r["passed"]


def test_judge_document_missing_and_nothing_to_check():
    item = _item(document_missing=True)
    assert review.judge(item, review.AnswerReplay(answer="I could not find this.", outcome="not_found"))["passed"]
    assert not review.judge(item, review.AnswerReplay(answer="It is 2 years.", outcome="answered"))["passed"]
    assert not review.judge(_item(), review.AnswerReplay(answer="x", outcome="answered"))["passed"]


def test_run_changes():
    assert [review._change(None, True), review._change(True, True), review._change(False, True),
            review._change(True, False)] == ["new", "same", "fixed", "broke"]


def test_clean_facts_limits_and_dedups():
    assert review.clean_facts([" a  b ", "a b", "", "c"]) == ["a b", "c"]
    with pytest.raises(Exception, match="at most"):
        review.clean_facts([f"f{i}" for i in range(review.MAX_FACTS + 1)])


def test_cluster_groups_near_vectors_and_keeps_far_ones_apart():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=16), rng.normal(size=16)
    vecs = [a + rng.normal(scale=0.05, size=16) for _ in range(3)] + [b + rng.normal(scale=0.05, size=16)
                                                                      for _ in range(2)]
    vecs = np.asarray([v / np.linalg.norm(v) for v in vecs], dtype="float32")
    assert review.cluster(vecs[[0, 3, 1, 4, 2]]) == [[0, 2, 4], [1, 3]]


def test_top_terms_prefer_what_sets_a_topic_apart():
    topic = ["doorbell warranty length", "how long is the doorbell warranty", "doorbell pro warranty"]
    others = ["router reset steps", "router offline", "warranty on the hub"]
    background = Counter()
    for q in topic + others:
        background.update(set(review._terms(q)))
    terms = review.top_terms(topic, background, k=2)
    assert terms[0] == "doorbell" and "warranty" in terms


def test_gaps_csv():
    report = {"topics": [{"label": "doorbell / warranty", "count": 2, "reasons": {"not_found": 2},
                          "trend": [0] * 29 + [2], "examples": ["a?", "b?"], "documents": [{"title": "Policy"}]}]}
    lines = review.gaps_csv(report).splitlines()
    assert lines[0] == "topic,count,not_found,partial,thumbs_down,last_7_days,examples,nearest_documents"
    assert lines[1] == "doorbell / warranty,2,2,0,0,2,a? | b?,Policy"


def test_percentile_matches_linear_interpolation():
    values = [1.0, 2.0, 3.0, 4.0]
    assert analytics.percentile(values, 50) == 2.5
    assert analytics.percentile(values, 100) == 4.0
    assert analytics.percentile([], 90) == 0.0
