"""Grid over fusion weights and RRF k on a BEIR dev set (plus a min-max score-interpolation baseline).

Usage: python benchmarks/tune_fusion.py --dataset DIR [--graph] [--max-queries N]

Each index is queried once per query (top 100); every fusion variant is then computed from those lists, so the grid
is cheap. Prints nDCG@10 / Recall@10 / Recall@100 / MRR@10 (and "all relevant in top 10" on multi-hop sets).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.types import Hit, SearchFilter  # noqa: E402
from evaluation.backends import default_embedder  # noqa: E402
from evaluation.beir import EVAL_TENANT, load_beir  # noqa: E402
from evaluation.metrics import mean_metrics  # noqa: E402
from evaluation.retrieval import MEASURES, build_indexes, default_cache_dir  # noqa: E402
from retrieval.fusion import reciprocal_rank_fusion  # noqa: E402


def minmax_fusion(lists: Mapping[str, Sequence[Hit]], weights: Mapping[str, float]) -> list[str]:
    """Convex combination of per-list min-max normalised scores (a chunk missing from a list gets 0 there)."""
    fused: dict[str, float] = {}
    for name, hits in lists.items():
        if not hits:
            continue
        hi, lo = max(h.score for h in hits), min(h.score for h in hits)
        span = (hi - lo) or 1.0
        for h in hits:
            fused[h.chunk_id] = fused.get(h.chunk_id, 0.0) + weights.get(name, 1.0) * (h.score - lo) / span
    return [c for c, _ in sorted(fused.items(), key=lambda kv: -kv[1])]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--graph", action="store_true", help="include the graph index (needs ingestion's extractor)")
    ap.add_argument("--max-queries", type=int, default=None)
    args = ap.parse_args()
    ds = load_beir(args.dataset, max_queries=args.max_queries)
    embedder = default_embedder()
    extractor = None
    if args.graph:
        from ingestion.entities import EntityExtractor  # benchmarks sit above every layer

        extractor = EntityExtractor()
    measures = MEASURES + ([("all_rel", 10)] if all(len(r) >= 2 for r in ds.qrels.values()) else [])
    flt = SearchFilter(tenant_id=EVAL_TENANT)
    with tempfile.TemporaryDirectory() as tmp:
        idx = build_indexes(ds, Path(tmp), embedder, cache_dir=default_cache_dir(), extract_entities=extractor)
        raw: dict[str, dict[str, list[Hit]]] = {}
        for qid, text in ds.queries.items():
            lists = {"keyword": idx.keyword.search(text, flt, 100),
                     "vector": idx.vector.search(embedder.embed_query(text), flt, 100)}
            if idx.graph is not None:
                lists["graph"] = idx.graph.search(text, flt, 100)
            raw[qid] = lists

    def report(label: str, run: dict[str, list[str]]) -> None:
        m = mean_metrics(run, ds.qrels, measures)
        print(f"{label:42s} " + " ".join(f"{k}={v:.4f}" for k, v in m.items()), flush=True)

    names = ["keyword", "vector"] + (["graph"] if args.graph else [])
    for name in names:
        report(f"single {name}", {q: [h.chunk_id for h in ls[name]] for q, ls in raw.items()})
    graph_weights = [0.0, 0.25, 0.5, 1.0] if args.graph else [0.0]
    for k, wk, wv, wg in itertools.product([10, 30, 60, 100], [0.5, 1.0, 1.5], [1.0], graph_weights):
        w = {"keyword": wk, "vector": wv, "graph": wg}
        run = {q: [f.chunk_id for f in reciprocal_rank_fusion(ls, weights=w, k=k, limit=100)] for q, ls in raw.items()}
        report(f"rrf k={k} w=({wk},{wv},{wg})", run)
    for wk, wg in itertools.product([0.3, 0.5, 0.7], graph_weights):
        w = {"keyword": wk, "vector": 1.0 - wk, "graph": wg}
        report(f"minmax w=({wk},{1 - wk:.1f},{wg})", {q: minmax_fusion(ls, w)[:100] for q, ls in raw.items()})


if __name__ == "__main__":
    main()
