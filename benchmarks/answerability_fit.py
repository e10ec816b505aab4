"""Which questions the answer pipeline should refuse: the evidence it has when it decides, per question, and rules
fitted on it.

    python benchmarks/answerability_fit.py dump --data-dir DIR --out ans.pkl   # the real retrieval, once
    python benchmarks/answerability_fit.py eval --cache ans.pkl                # outcomes of the shipped rule
    python benchmarks/answerability_fit.py dump --data-dir DIR --out b.pkl --squad 500 --squad-disjoint

``dump`` runs the real retrieval of the answer pipeline (``answer_quality.KB`` / ``MemoryKB``; ``--data-dir`` reuses
their ingested indexes) for:

- ``pos``: answerable questions: the demo support set (first turns), doc2dial VA and DMV (answer-bearing first
  questions), SQuAD v2 dev-half answerable;
- ``ontopic``: unanswerable questions about the indexed documents: the demo set's unanswerable ones and SQuAD v2's
  adversarial ones (they should end *not found* or *partial*);
- ``offkb``: questions about something else entirely: HotpotQA and SQuAD v1.1 questions against the demo KB and
  the help pages, HotpotQA and demo questions against the SQuAD v2 articles (they should end *not found*).

and keeps the rewritten query, the retrieved chunks and the answering units ranked with the bundled embedder.
``eval`` prints, per set and kind, the share of each outcome (:func:`app.generation.answerability.assess`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import pickle
import random
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def offkb_questions(n: int, seed: int = 5) -> dict[str, list[str]]:
    """``n`` questions each from HotpotQA, SQuAD v1.1 and the demo support set (answerable first turns)."""
    import answer_quality as aq

    rng = random.Random(seed)
    ev = aq.eval_dir()
    hotpot = [q["text"] for q in _lines(ev / "hotpotqa_distractor_sample100" / "queries.jsonl")]
    squad1 = [q["text"] for q in _lines(ev / "squad_v1.1_dev" / "queries.jsonl")]
    demo = [q["question"] for q in _lines(ROOT / "demo" / "support_questions.jsonl")
            if q["answerable"] and not q.get("previous")]
    return {"hotpot": rng.sample(hotpot, min(n, len(hotpot))), "squad1": rng.sample(squad1, min(n, len(squad1))),
            "demo": rng.sample(demo, min(n, len(demo)))}


#: The SQuAD v2 sample of ``answer_quality.py --sets squad2`` (seed 7, 200 answerable then 200 adversarial).
BENCHMARK_SEED, BENCHMARK_N = 7, 200


def squad_sample(answers: list[dict[str, Any]], n: int, disjoint: bool = False) -> dict[str, list[dict[str, Any]]]:
    """``n`` answerable (``pos``) and ``n`` adversarial (``ontopic``) SQuAD v2 questions: the benchmark's own sample
    (drawn as ``answer_quality.run_squad2`` draws it), or with ``disjoint`` a second sample (seed 11) of questions the
    benchmark never asks, to check a rule on questions it was not chosen on."""
    pools = {"pos": [a for a in answers if not a["is_impossible"]],
             "ontopic": [a for a in answers if a["is_impossible"]]}
    rng = random.Random(BENCHMARK_SEED)
    if not disjoint:
        return {kind: rng.sample(pool, n) for kind, pool in pools.items()}
    asked = {a["_id"] for pool in pools.values() for a in rng.sample(pool, BENCHMARK_N)}
    other = random.Random(11)
    return {kind: other.sample([a for a in pool if a["_id"] not in asked], n) for kind, pool in pools.items()}


async def dump(data_dir: Path, out: Path, n_off: int, n_squad: int, disjoint: bool = False) -> None:
    import answer_quality as aq

    from app.generation.rewrite import rewrite_query
    from app.generation.units import rank_units
    from core.types import SearchFilter

    items: list[dict[str, Any]] = []
    off = offkb_questions(n_off)

    async def record(kb: Any, tenant: str, set_name: str, kind: str, question: str) -> None:
        pipe = kb.container.answers
        query = await rewrite_query(question, [], llm=None, count_tokens=pipe.fallback.count_tokens)
        result = await pipe.retriever.retrieve(query, SearchFilter(tenant_id=tenant), kb.settings.retrieval.top_k)
        units = rank_units(query, result.chunks, embedder=pipe.embedder)
        items.append({"set": set_name, "kind": kind, "question": question, "query": query,
                      "chunks": list(result.chunks), "units": units})

    kb = aq.KB(data_dir / "demo", "extractive")
    for it in _lines(ROOT / "demo" / "support_questions.jsonl"):
        if not it.get("previous"):
            await record(kb, "default", "demo", "pos" if it["answerable"] else "ontopic", it["question"])
    for q in off["hotpot"] + off["squad1"]:
        await record(kb, "default", "demo", "offkb", q)
    print(f"demo: {len(items)}", flush=True)
    kb.close()

    kb = aq.KB(data_dir / "doc2dial", "extractive")
    for dom in ("va", "dmv"):
        qs = _lines(aq.eval_dir() / "doc2dial_dev" / dom / "questions.jsonl")
        for q in qs:
            if not q["agent_response_is_question"]:
                await record(kb, dom, dom, "pos", q["question"])
        for q in off["hotpot"][: n_off // 2] + off["demo"][: n_off // 2]:
            await record(kb, dom, dom, "offkb", q)
        print(f"{dom}: {len(items)}", flush=True)
    kb.close()

    kb = aq.MemoryKB(data_dir / "squad2", "extractive")
    d = aq.eval_dir() / "squad_v2.0_dev_devhalf"
    texts = {q["_id"]: q["text"] for q in _lines(d / "queries.jsonl")}
    for kind, questions in squad_sample(_lines(d / "answers.jsonl"), n_squad, disjoint).items():
        for a in questions:
            await record(kb, "squad2", "squad2", kind, texts[a["_id"]])
    for q in off["hotpot"] + off["demo"]:
        await record(kb, "squad2", "squad2", "offkb", q)
    print(f"squad2: {len(items)}", flush=True)
    out.write_bytes(pickle.dumps(items))
    print(f"dumped {len(items)} questions to {out}")


def evaluate(items: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    from app.generation import answerability

    rows: dict[str, Counter[str]] = {}
    for it in items:
        units = it["units"]
        verdict = answerability.assess(it["query"], it["chunks"], units[0] if units else None)
        rows.setdefault(f"{it['set']}/{it['kind']}", Counter())[verdict.outcome] += 1
    outcomes = ("answered", "partial", "not_found")
    return {k: {o: round(c[o] / sum(c.values()), 3) for o in outcomes} | {"n": sum(c.values())}
            for k, c in sorted(rows.items())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["dump", "eval"])
    ap.add_argument("--data-dir", type=Path, default=Path("/tmp/kbqa-answers"))
    ap.add_argument("--out", type=Path, default=Path("answerability.pkl"))
    ap.add_argument("--cache", type=Path, default=Path("answerability.pkl"))
    ap.add_argument("--offkb", type=int, default=60, help="off-KB questions per source")
    ap.add_argument("--squad", type=int, default=200, help="SQuAD v2 answerable and adversarial questions each")
    ap.add_argument("--squad-disjoint", action="store_true",
                    help="SQuAD v2 questions the answer benchmark does not ask (seed 11), not its own 200 + 200")
    args = ap.parse_args()
    if args.mode == "dump":
        asyncio.run(dump(args.data_dir, args.out, args.offkb, args.squad, args.squad_disjoint))
    else:
        for key, row in evaluate(pickle.loads(args.cache.read_bytes())).items():
            print(json.dumps({"set": key, **row}))


if __name__ == "__main__":
    main()
