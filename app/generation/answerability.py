"""Answerability: refuse when the retrieved evidence does not look like it contains an answer.

Features of a retrieval result (all comparable across queries, unlike raw BM25 scores):

- ``vector``: best dense cosine among the top chunks (``RankedChunk.scores["vector"]``);
- ``coverage``: best share of the question's content terms found in one top chunk (title + text);
- ``agreement``: 1 when the top chunk was found by both the keyword and the vector retriever.

A logistic model over these gives ``p(answerable)``; the question is refused below ``threshold``. When the vector
retriever did not run (degraded), a lexical-only model is used. Coefficients and thresholds are CALIBRATED on SQuAD
v1.1 dev by ``python -m app.generation.calibrate`` (answerable questions of indexed articles vs questions of articles
left out of the index); the numbers below are its output.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from app.core.types import RankedChunk
from app.generation.text import content_terms, overlap

# Output of `python -m app.generation.calibrate` (seed 13; 24 of 48 SQuAD dev articles indexed = 1,065 paragraphs;
# 300 answerable + 300 unanswerable questions; fitted on half, measured on the other half). The dense feature is the
# all-MiniLM-L6-v2 cosine: recalibrate when the embedding model changes.
#: (intercept, vector, coverage, agreement); held-out: refusal precision 0.914, recall 0.896, answered 0.911
FULL_MODEL: tuple[float, float, float, float] = (-11.347, 17.893, 5.106, 0.695)
FULL_THRESHOLD = 0.43
#: (intercept, coverage) for results without dense scores (vector retriever degraded); held-out: refusal precision
#: 0.830, recall 0.922, answered 0.801
LEXICAL_MODEL: tuple[float, float] = (-5.294, 10.49)
LEXICAL_THRESHOLD = 0.49

TOP_N = 3


@dataclass(frozen=True, slots=True)
class Decision:
    answerable: bool
    probability: float
    features: dict[str, float]
    model: str


def features(question: str, chunks: Sequence[RankedChunk], top_n: int = TOP_N) -> dict[str, float]:
    top = list(chunks[:top_n])
    q = content_terms(question)
    cov = max((overlap(q, content_terms(f"{c.chunk.title} {c.chunk.text}")) for c in top), default=0.0)
    vec = [c.scores["vector"] for c in top if "vector" in c.scores]
    feats = {"coverage": cov, "agreement": 0.0}
    if top:
        both = {"keyword", "vector"} <= (set(top[0].scores) | set(top[0].ranks))
        feats["agreement"] = 1.0 if both else 0.0
    if vec:
        feats["vector"] = max(vec)
    return feats


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(x, 60.0), -60.0)))


def decide(question: str, chunks: Sequence[RankedChunk]) -> Decision:
    if not chunks:
        return Decision(False, 0.0, {}, "empty")
    f = features(question, chunks)
    if "vector" in f:
        b, wv, wc, wa = FULL_MODEL
        p = _sigmoid(b + wv * f["vector"] + wc * f["coverage"] + wa * f["agreement"])
        return Decision(p >= FULL_THRESHOLD, p, f, "full")
    b, wc = LEXICAL_MODEL
    p = _sigmoid(b + wc * f["coverage"])
    return Decision(p >= LEXICAL_THRESHOLD, p, f, "lexical")
