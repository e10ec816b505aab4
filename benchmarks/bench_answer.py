"""Answer benchmark on SQuAD v1.1 dev: ``python benchmarks/bench_answer.py [--n 30] [--backends extractive,local]``.

Index: the even half of the 48 articles (same split as ``evaluation.calibrate``), BM25 + MiniLM, in memory.
Per backend, over ``n`` answerable questions: time to Sources, to first token and to the first complete sentence
(p50 / p95), answer-contains-gold, citation precision (cited passage is the gold paragraph or contains a gold answer)
and the share of citations the support check marks supported. Refusal precision / recall use ``n`` answerable and
``n`` unanswerable (held-out article) questions. ``--server-url`` adds an OpenAI-compatible server (vLLM or
llama_cpp.server). Pin threads with ``--n-threads`` (the embedded target is 2 cores).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from app.generation.backends import ExtractiveBackend, OpenAICompatBackend, build_llm
from app.generation.events import Citations, Done, Sources, Token
from app.generation.pipeline import AnswerPipeline
from core.settings import GenerationSettings
from core.types import SearchFilter
from evaluation.squad import squad_eval

SENTENCE_END = re.compile(r"[.!?](\s|$)")


def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    values = sorted(values)
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 1)


async def run_one(pipeline: AnswerPipeline, question: str) -> dict[str, Any]:
    t0 = time.perf_counter()
    out: dict[str, Any] = {"sources_ms": None, "first_token_ms": None, "first_sentence_ms": None}
    text = ""
    sources: list[dict[str, Any]] = []
    citations: list[dict[str, Any]] = []
    done: Done | None = None
    async for e in pipeline.run(question, flt=SearchFilter(tenant_id="t"), history=[], request_id="b",
                                conversation_id="b", message_id="b", top_k=5):
        now = (time.perf_counter() - t0) * 1000
        if isinstance(e, Sources):
            out["sources_ms"], sources = now, e.sources
        elif isinstance(e, Token):
            out["first_token_ms"] = out["first_token_ms"] or now
            text += e.text
            if out["first_sentence_ms"] is None and SENTENCE_END.search(text):
                out["first_sentence_ms"] = now
        elif isinstance(e, Citations):
            citations = e.citations
        elif isinstance(e, Done):
            done = e
    if out["first_sentence_ms"] is None and text:
        out["first_sentence_ms"] = (time.perf_counter() - t0) * 1000
    assert done is not None
    out.update(answer=done.answer, refused=done.refused, degraded=done.degraded, sources=sources, citations=citations)
    return out


def summarise(name: str, pos: list[dict[str, Any]], neg: list[dict[str, Any]], qs: list[dict[str, Any]]) -> dict:
    answered = [(r, q) for r, q in zip(pos, qs, strict=True) if not r["refused"]]
    contains = [any(a.lower() in r["answer"].lower() for a in q["answers"]) for r, q in answered]
    cite_ok, supported = [], []
    for r, q in answered:
        by_n = {s["n"]: s for s in r["sources"]}
        for c in r["citations"]:
            src = by_n[c["n"]]
            cite_ok.append(src["chunk_id"] == q["gold_doc"] or any(a in src["text"] for a in q["answers"]))
            supported.append(c["supported"])
    refused_pos = sum(r["refused"] for r in pos)
    refused_neg = sum(r["refused"] for r in neg)
    lat = [r for r in pos if not r["refused"]]
    return {
        "backend": name,
        "questions": len(pos),
        "sources_ms_p50_p95": (pct([r["sources_ms"] for r in pos], 0.5), pct([r["sources_ms"] for r in pos], 0.95)),
        "first_token_ms_p50_p95": (pct([r["first_token_ms"] for r in lat], 0.5),
                                   pct([r["first_token_ms"] for r in lat], 0.95)),
        "first_sentence_ms_p50_p95": (pct([r["first_sentence_ms"] for r in lat], 0.5),
                                      pct([r["first_sentence_ms"] for r in lat], 0.95)),
        "answer_contains_gold": round(sum(contains) / max(len(answered), 1), 3),
        "answer_contains_gold_all": round(sum(contains) / max(len(pos), 1), 3),
        "citation_precision": round(sum(cite_ok) / max(len(cite_ok), 1), 3),
        "citations_supported": round(sum(supported) / max(len(supported), 1), 3),
        "refusal_precision": round(refused_neg / max(refused_pos + refused_neg, 1), 3),
        "refusal_recall": round(refused_neg / max(len(neg), 1), 3),
        "degraded_runs": sum(r["degraded"] for r in pos + neg),
    }


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--backends", default="extractive,local")
    ap.add_argument("--server-url", default="")
    ap.add_argument("--server-model", default="kbqa-llm")
    ap.add_argument("--n-threads", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "kbqa-bench-squad-minilm.npz"))
    args = ap.parse_args()

    ev = squad_eval(per_class=args.n, rng=random.Random(args.seed), cache=Path(args.cache))
    embedder, retriever, pos_q, neg_q = ev.embedder, ev.retriever, ev.answerable, ev.unanswerable
    fallback = ExtractiveBackend(embedder)
    llms: dict[str, Any] = {}
    for name in args.backends.split(","):
        settings = GenerationSettings(backend=name, n_threads=args.n_threads, context_window=2048)  # type: ignore[arg-type]
        llms[name] = build_llm(settings, embedder=embedder)
    if args.server_url:
        llms["server"] = OpenAICompatBackend(args.server_url, model=args.server_model, context_window=2048,
                                             first_token_timeout_s=120)
    await run_one(AnswerPipeline(retriever, fallback, fallback, embedder, GenerationSettings(), {}), "warm up")
    results = []
    for name, llm in llms.items():
        settings = GenerationSettings(max_new_tokens=args.max_new_tokens, context_window=2048,
                                      first_token_timeout_s=120)
        pipe = AnswerPipeline(retriever, llm, fallback, embedder, settings, {}, rewrite_with_llm=False)
        pos = [await run_one(pipe, q["text"]) for q in pos_q]
        neg = [await run_one(pipe, q["text"]) for q in neg_q]
        results.append(summarise(name, pos, neg, pos_q))
        print(json.dumps(results[-1]), flush=True)
        example = next((r for r in pos if not r["refused"]), None)
        if example:
            print(f"# example answer ({name}): {example['answer'][:300]!r}", flush=True)
    print(f"# load average {os.getloadavg()}, cpu count {os.cpu_count()}, n_threads {args.n_threads}")


if __name__ == "__main__":
    asyncio.run(main())
