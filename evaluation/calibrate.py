"""Calibrate the answerability model on SQuAD v1.1 dev: ``python -m evaluation.calibrate [--per-class N]``.

Half of the 48 articles are indexed (even positions, sorted by title); questions about indexed articles are
answerable, questions about held-out articles are not (their answer is not in the index). Retrieval is BM25 + MiniLM
dense, RRF-fused (``MemoryHybridRetriever``). Questions are split in two: a logistic model is fitted on the first half
and its threshold chosen for the best balanced accuracy; the second half reports refusal precision / recall. The
printed constants go into ``app/generation/answerability.py``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

import numpy as np

from app.generation.answerability import features
from evaluation.squad import squad_eval


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = 1e-2, iters: int = 50) -> np.ndarray:
    """Newton-Raphson logistic regression with a small L2 penalty; returns [intercept, *weights]."""
    xb = np.hstack([np.ones((len(x), 1)), x])
    w = np.zeros(xb.shape[1])
    for _ in range(iters):
        p = 1 / (1 + np.exp(-xb @ w))
        grad = xb.T @ (p - y) + l2 * w
        hess = (xb * (p * (1 - p))[:, None]).T @ xb + l2 * np.eye(len(w))
        w -= np.linalg.solve(hess, grad)
    return w


def best_threshold(p: np.ndarray, y: np.ndarray) -> float:
    best, best_t = -1.0, 0.5
    for t in np.linspace(0.05, 0.95, 91):
        pred = p >= t
        bacc = (np.mean(pred[y == 1]) + np.mean(~pred[y == 0])) / 2
        if bacc > best:
            best, best_t = bacc, float(t)
    return round(best_t, 2)


def refusal_metrics(p: np.ndarray, y: np.ndarray, t: float) -> dict[str, float]:
    refuse = p < t
    tp = float(np.sum(refuse & (y == 0)))
    return {
        "refusal_precision": tp / max(float(np.sum(refuse)), 1.0),
        "refusal_recall": tp / max(float(np.sum(y == 0)), 1.0),
        "answer_rate_on_answerable": float(np.mean(~refuse[y == 1])),
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--per-class", type=int, default=300)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kbqa-bench-squad-minilm.npz"),
                    help="embedding cache shared with benchmarks/bench_answer.py ('' disables it)")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    ev = squad_eval(per_class=args.per_class, rng=rng, cache=Path(args.cache) if args.cache else None)
    embedder, retriever, pos, neg = ev.embedder, ev.retriever, ev.answerable, ev.unanswerable
    qs = pos + neg
    y = np.array([1] * len(pos) + [0] * len(neg), dtype=np.float64)
    qvecs = embedder.embed_documents([q["text"] for q in qs])
    feats = [features(q["text"], retriever.search(q["text"], 5, qvec=v)) for q, v in zip(qs, qvecs, strict=True)]
    full = np.array([[f["vector"], f["coverage"], f["agreement"]] for f in feats])
    lex = full[:, 1:2]  # coverage only: without dense scores there is no retriever agreement either
    order = np.array(rng.sample(range(len(qs)), len(qs)))
    fit, test = order[: len(qs) // 2], order[len(qs) // 2 :]
    for name, x in (("FULL", full), ("LEXICAL", lex)):
        w = fit_logistic(x[fit], y[fit])
        p = 1 / (1 + np.exp(-np.hstack([np.ones((len(x), 1)), x]) @ w))
        t = best_threshold(p[fit], y[fit])
        print(f"{name}_MODEL = {tuple(round(float(v), 3) for v in w)}")
        print(f"{name}_THRESHOLD = {t}")
        print(f"# held-out ({len(test)} questions): {refusal_metrics(p[test], y[test], t)}")
    print(f"# indexed articles {len(ev.indexed)}, chunks {len(retriever.chunks)}, questions {len(pos)}+{len(neg)}, "
          f"seed {args.seed}")


if __name__ == "__main__":
    main()
