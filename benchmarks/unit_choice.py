"""Which retrieved section the answer is composed from: top-1 accuracy of :func:`app.generation.units.rank_units`,
and a split fit of its weights.

    python benchmarks/unit_choice.py dump --data-dir DIR --out units.pkl   # run the real path once, keep what
                                                                           # rank_units was given per question
    python benchmarks/unit_choice.py eval --cache units.pkl                # top-1 per set and split half, now
    python benchmarks/unit_choice.py fit --cache units.pkl                 # fit on one half, report on the other

``dump`` runs the demo support set and doc2dial (VA, DMV) through the real retrieval of the answer pipeline
(``answer_quality.KB``; ``--data-dir`` reuses its ingested indexes) and records the rewritten query (keyword rewrite
for follow-ups) and the retrieved chunks that ``rank_units`` is given. A unit is right when it is the expected
section (demo: the file and heading, or a passage holding the heading as a line; doc2dial: the grounding page-section
file). ``in_set`` is the share of questions whose right
section was retrieved at all (the ceiling for unit choice).

Splits, so weights are not judged on what they were fitted to: demo first turns by question id parity (odd / even);
doc2dial by domain (VA / DMV). ``fit`` fits on demo-odd + VA and reports demo-even + DMV, and the reverse.
Answerable questions only (all demo answerable turns, follow-ups with the keyword rewrite).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import pickle
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def right(item: dict[str, Any], document_id: str, section_path: tuple[str, ...], text: str) -> bool:
    for doc, heading in item["gold"]:
        if document_id != doc:
            continue
        if heading is None or heading in section_path[-1:]:
            return True
        if heading in {ln.strip() for ln in text.splitlines()}:
            return True
    return False


async def dump(data_dir: Path, out: Path, n: int | None) -> None:
    import answer_quality as aq

    from app.generation.rewrite import rewrite_query
    from core.types import SearchFilter

    items: list[dict[str, Any]] = []

    async def retrieved(kb: Any, tenant: str, question: str, history: list[dict[str, str]]) -> tuple[str, list[Any]]:
        """What the answer pipeline hands to rank_units: the rewritten query and the retrieved chunks."""
        pipe = kb.container.answers
        query = await rewrite_query(question, history, llm=None, count_tokens=pipe.fallback.count_tokens)
        result = await pipe.retriever.retrieve(query, SearchFilter(tenant_id=tenant), kb.settings.retrieval.top_k)
        if result.degraded:
            print(f"degraded retrieval {result.degraded} for {question!r}", flush=True)
        return query, list(result.chunks)

    kb = aq.KB(data_dir / "demo", "extractive")
    kb.filenames = kb.filenames or aq._load_names(data_dir / "demo")
    by_name = {v: k for k, v in kb.filenames.items()}
    demo = [json.loads(x) for x in (ROOT / "demo" / "support_questions.jsonl").read_text().splitlines() if x.strip()]
    for it in demo[:n]:
        if not it["answerable"]:
            continue
        history: list[dict[str, str]] = []
        if it.get("previous"):  # the previous answer is not asked again: the keyword rewrite reads the user turn
            history = [{"role": "user", "content": it["previous"]}, {"role": "assistant", "content": ""}]
        query, chunks = await retrieved(kb, "default", it["question"], history)
        items.append({"set": "demo", "id": it["id"], "question": it["question"], "query": query, "chunks": chunks,
                      "followup": bool(it.get("previous")), "kind": it.get("kind", ""),
                      "gold": [(by_name.get(e["file"], "?"), e["section"]) for e in it["expected"]]})
    print(f"demo: {len(items)}", flush=True)
    kb.close()

    kb = aq.KB(data_dir / "doc2dial", "extractive")
    kb.filenames = kb.filenames or aq._load_names(data_dir / "doc2dial")
    by_name = {v: k for k, v in kb.filenames.items()}
    for dom in ("va", "dmv"):
        d = aq.eval_dir() / "doc2dial_dev" / dom
        qs = [json.loads(x) for x in (d / "questions.jsonl").read_text().splitlines() if x.strip()]
        qs = [q for q in qs if not q["agent_response_is_question"]]
        for q in qs[:n]:
            query, chunks = await retrieved(kb, dom, q["question"], [])
            gold = by_name.get(f"{dom}/{Path(q['doc_file']).name}", "?")
            items.append({"set": dom, "id": q["id"], "question": q["question"], "query": query, "chunks": chunks,
                          "followup": False, "kind": "", "gold": [(gold, None)]})
        print(f"{dom}: {len(items)}", flush=True)
    kb.close()
    out.write_bytes(pickle.dumps(items))
    print(f"dumped {len(items)} questions to {out}")


def half(item: dict[str, Any]) -> str:
    """The split: 'A' = demo odd ids + VA, 'B' = demo even ids + DMV."""
    if item["set"] == "demo":
        digits = "".join(ch for ch in item["id"] if ch.isdigit()) or "0"
        return "A" if int(digits) % 2 else "B"
    return "A" if item["set"] == "va" else "B"


def evaluate(items: list[dict[str, Any]], embedder: Any, weights: dict[str, float] | None = None,
             verbose: bool = False) -> dict[str, dict[str, float]]:
    from app.generation import units as U

    rows: dict[str, list[tuple[bool, bool]]] = {}
    for it in items:
        got = U.rank_units(it["query"], it["chunks"], embedder=embedder, weights=weights)
        ok = bool(got) and right(it, got[0].document_id, got[0].section_path, got[0].text)
        ceiling = any(right(it, u.document_id, u.section_path, u.text) for u in got)
        for key in (it["set"], f"{it['set']}-{half(it)}", f"half-{half(it)}"):
            rows.setdefault(key, []).append((ok, ceiling))
        if verbose and not ok and ceiling:
            print(f"MISS {it['set']} {it['question'][:80]!r} -> {got[0].label}")
    return {k: {"top1": round(sum(o for o, _ in v) / len(v), 3), "in_set": round(sum(c for _, c in v) / len(v), 3),
                "n": len(v)} for k, v in sorted(rows.items())}


def fit(items: list[dict[str, Any]], embedder: Any) -> None:
    from app.generation import units as U

    grid = {
        "rank": [0.25, 0.5, 1.0],
        "coverage": [1.0, 2.0],
        "heading": [0.5, 1.0, 2.0],
        "vector": [0.0, 1.0],
        "sentence": [0.0, 1.0, 2.0],
        "label": [0.0, 1.0, 2.0],
        "shape": [0.0, 0.25],
    }
    base = dict(U.WEIGHTS)
    # features are computed once per question; the score is linear in them
    feats: list[tuple[dict[str, Any], list[tuple[dict[str, float], bool]]]] = []
    for it in items:
        got = U.rank_units(it["query"], it["chunks"], embedder=embedder, weights={"sentence": 1.0, "label": 1.0})
        feats.append((it, [(u.features, right(it, u.document_id, u.section_path, u.text)) for u in got]))

    def acc(weights: dict[str, float], which: str) -> float:
        hits = total = 0
        for it, units in feats:
            if half(it) != which:
                continue
            total += 1
            if units:
                best = max(units, key=lambda fu: sum(weights.get(k, 0.0) * v for k, v in fu[0].items()))
                hits += best[1]
        return hits / max(total, 1)

    keys = list(grid)
    for train, test in (("A", "B"), ("B", "A")):
        best_w, best_acc = base, -1.0
        for values in itertools.product(*(grid[k] for k in keys)):
            w = {**base, **dict(zip(keys, values, strict=True))}
            a = acc(w, train)
            if a > best_acc + 1e-9:
                best_w, best_acc = w, a
        print(json.dumps({"fit_on": train, "weights": {k: best_w[k] for k in keys}, "train_top1": round(best_acc, 3),
                          "test_on": test, "test_top1": round(acc(best_w, test), 3),
                          "current_weights_test_top1": round(acc(base, test), 3)}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["dump", "eval", "fit"])
    ap.add_argument("--data-dir", type=Path, default=None)
    ap.add_argument("--cache", "--out", dest="cache", type=Path, default=Path("unit_choice.pkl"))
    ap.add_argument("--n", type=int, default=None, help="dump: at most this many questions per set")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    if args.mode == "dump":
        if args.data_dir is None:
            raise SystemExit("dump needs --data-dir (the answer_quality.py data dir with demo/ and doc2dial/)")
        asyncio.run(dump(args.data_dir, args.cache, args.n))
        return
    from evaluation.squad import MiniLMEmbedder

    items = pickle.loads(args.cache.read_bytes())
    embedder = MiniLMEmbedder()
    if args.mode == "eval":
        for k, v in evaluate(items, embedder, verbose=args.verbose).items():
            print(k, json.dumps(v))
    else:
        fit(items, embedder)


if __name__ == "__main__":
    main()
