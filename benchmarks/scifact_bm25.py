"""BM25 nDCG@10 / Recall@100 of the embedded keyword index on BEIR SciFact (title + text indexed).

Usage: python benchmarks/scifact_bm25.py [--title-boost 0.5] [--section-boost 0.3]
Data: $KBQA_EVAL_DIR/beir_scifact (default ../shared/eval relative to the repository).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.types import ChunkRecord, SearchFilter  # noqa: E402
from retrieval.keyword import TantivyKeywordIndex  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def ndcg_at_10(ranked: list[str], relevant: set[str]) -> float:
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranked[:10]) if d in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(10, len(relevant))))
    return dcg / ideal if ideal else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--title-boost", type=float, default=0.25)
    ap.add_argument("--section-boost", type=float, default=0.3)
    args = ap.parse_args()
    data = Path(os.environ.get("KBQA_EVAL_DIR", REPO.parent / "shared" / "eval")) / "beir_scifact"
    if not data.exists():
        sys.exit(f"SciFact not found at {data}: set KBQA_EVAL_DIR")
    qrels: dict[str, set[str]] = {}
    for line in (data / "qrels.tsv").read_text().splitlines()[1:]:
        q, d, s = line.split("\t")
        if int(s) > 0:
            qrels.setdefault(q, set()).add(d)
    queries = {}
    for line in (data / "queries.jsonl").open():
        row = json.loads(line)
        if row["_id"] in qrels:
            queries[row["_id"]] = row["text"]
    with tempfile.TemporaryDirectory() as tmp:
        idx = TantivyKeywordIndex(Path(tmp), title_boost=args.title_boost, section_boost=args.section_boost)
        docs = []
        t0 = time.perf_counter()
        for line in (data / "corpus.jsonl").open():
            row = json.loads(line)
            c = ChunkRecord(id=row["_id"], tenant_id="t", document_id=row["_id"], document_version=1,
                            title=row.get("title", ""), text=row["text"])
            docs.append((c.document_id, [c]))
        idx.upsert_many(docs)
        build = time.perf_counter() - t0
        flt = SearchFilter(tenant_id="t")
        nd, rec = [], []
        for qid, text in queries.items():
            ranked = [h.chunk_id for h in idx.search(text, flt, 100)]
            nd.append(ndcg_at_10(ranked, qrels[qid]))
            rec.append(len(set(ranked) & qrels[qid]) / len(qrels[qid]))
        idx.close()
    print(f"docs={len(docs)} queries={len(queries)} build={build:.1f}s title_boost={args.title_boost} "
          f"section_boost={args.section_boost} nDCG@10={sum(nd)/len(nd):.4f} R@100={sum(rec)/len(rec):.4f}")


if __name__ == "__main__":
    main()
