"""Graph retriever alone on the HotpotQA distractor sample: recall@k of the gold paragraphs.

    python benchmarks/graph_hotpot.py [--k 10] [--cache /tmp/hotpot_entities.json]

Reads ``$KBQA_EVAL_DIR/hotpotqa_distractor_sample100`` (default ``../shared/eval``). Each paragraph is one chunk (its
own document); entities come from ``ingestion.entities.EntityExtractor`` over "title. text", and the same extractor
links queries. ``--cache`` keeps the extracted entities between runs (extraction dominates the run time).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.types import ChunkRecord, SearchFilter
from ingestion.entities import EntityExtractor
from retrieval.graph import NetworkXGraphIndex, PPRParams

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--hops", type=int, default=2)
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--no-query-extractor", action="store_true")
    args = ap.parse_args()
    data = Path(os.environ.get("KBQA_EVAL_DIR", REPO.parent / "shared" / "eval")) / "hotpotqa_distractor_sample100"
    if not data.exists():
        sys.exit(f"evaluation data not found at {data} (set KBQA_EVAL_DIR)")
    corpus = [json.loads(line) for line in (data / "corpus.jsonl").open()]
    queries = [json.loads(line) for line in (data / "queries.jsonl").open()]
    gold: dict[str, set[str]] = defaultdict(set)
    for line in list((data / "qrels.tsv").open())[1:]:
        qid, cid, score = line.split("\t")
        if int(score) > 0:
            gold[qid].add(cid)
    extractor = EntityExtractor()
    if args.cache and args.cache.exists():
        entities = json.loads(args.cache.read_text())
    else:
        start = time.perf_counter()
        entities = extractor.extract([f"{d['title']}. {d['text']}" for d in corpus])
        print(f"extracted entities of {len(corpus)} paragraphs in {time.perf_counter() - start:.1f} s")
        if args.cache:
            args.cache.write_text(json.dumps(entities))
    with tempfile.TemporaryDirectory() as tmp:
        index = NetworkXGraphIndex(
            Path(tmp), query_extractor=None if args.no_query_extractor else extractor, ppr=PPRParams(hops=args.hops)
        )
        for d, ents in zip(corpus, entities, strict=True):
            chunk = ChunkRecord(
                id=d["_id"], tenant_id="t", document_id=d["_id"], document_version=1, title=d["title"], text=d["text"]
            )
            index.upsert_document(d["_id"], [chunk], [ents])
        flt = SearchFilter("t")
        found = total = empty = both = 0
        latencies = []
        for q in queries:
            start = time.perf_counter()
            hits = index.search(q["text"], flt, args.k)
            latencies.append((time.perf_counter() - start) * 1000)
            got = {h.chunk_id for h in hits} & gold[q["_id"]]
            found += len(got)
            total += len(gold[q["_id"]])
            empty += not hits
            both += len(got) == len(gold[q["_id"]])
    latencies.sort()
    print(
        f"graph-only recall@{args.k}: {found / total:.3f} ({found}/{total} gold paragraphs); "
        f"both golds found: {both}/{len(queries)}; queries with no linked entity: {empty}/{len(queries)}; "
        f"median search {latencies[len(latencies) // 2]:.1f} ms"
    )


if __name__ == "__main__":
    main()
