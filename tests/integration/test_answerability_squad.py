"""The calibrated answerability decision on real SQuAD v1.1 dev questions (lexical path, no model needed):
questions about indexed articles are answered, questions about held-out articles are refused."""

from __future__ import annotations

import random

import pytest

from app.generation import answerability
from evaluation.squad import MemoryHybridRetriever, load_squad, split_articles, squad_chunks, squad_dir

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not (squad_dir() / "corpus.jsonl").is_file(),
                       reason="SQuAD v1.1 dev not found under $KBQA_EVAL_DIR or ../shared/eval"),
]


def test_lexical_refusal_on_squad() -> None:
    paras, questions = load_squad()
    indexed, held_out = split_articles(paras)
    retriever = MemoryHybridRetriever(squad_chunks(paras, indexed), None)
    rng = random.Random(99)  # not the calibration seed
    pos = rng.sample([q for q in questions if q["article"] in indexed], 60)
    neg = rng.sample([q for q in questions if q["article"] in held_out], 60)
    refused_pos = sum(not answerability.decide(q["text"], retriever.search(q["text"], 5)).answerable for q in pos)
    refused_neg = sum(not answerability.decide(q["text"], retriever.search(q["text"], 5)).answerable for q in neg)
    precision = refused_neg / max(refused_pos + refused_neg, 1)
    recall = refused_neg / len(neg)
    assert precision >= 0.7 and recall >= 0.7, (precision, recall)
