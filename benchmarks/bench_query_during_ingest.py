"""Query latency while ingestion embeds in the same process (embedded mode), vs idle.

One embedder (the bundled MiniLM) is shared, as in ``kbqa serve``: a background thread embeds document chunks the way
the ingest pipeline does (``embed_documents`` on batches of ``--batch`` texts) while the main thread times
``embed_query`` calls, one every ``--gap-ms``. Prints p50/p95/max of the query embedding time idle and during
ingestion, and the ingestion throughput in both set-ups.

    python benchmarks/bench_query_during_ingest.py [--queries 40] [--chunks 800]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from core.settings import EmbeddingSettings
from retrieval.embedders import build_embedder

QUESTIONS = [
    "My camera keeps going offline at night, what should I check?",
    "How do I reset the hub to factory settings?",
    "Why was I charged twice this month?",
    "The doorbell won't pair after I changed my router",
]
CHUNK = (
    "The hub keeps a local copy of every automation, so rules run even when the internet connection drops. "
    "When the connection comes back the hub uploads its event log and the app shows the missed notifications. "
) * 6


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def time_queries(embedder, n: int, gap_s: float) -> list[float]:  # noqa: ANN001
    out = []
    for i in range(n):
        t = time.perf_counter()
        embedder.embed_query(QUESTIONS[i % len(QUESTIONS)])
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(gap_s)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--chunks", type=int, default=800)
    ap.add_argument("--batch", type=int, default=32, help="the pipeline's embedding batch (settings.embedding)")
    ap.add_argument("--gap-ms", type=float, default=100)
    args = ap.parse_args()
    embedder = build_embedder(EmbeddingSettings())
    embedder.embed_query("warm up")
    idle = time_queries(embedder, args.queries, args.gap_ms / 1000)

    done = threading.Event()
    embedded = [0]

    def ingest() -> None:
        texts = [f"{i} {CHUNK}" for i in range(args.chunks)]
        for i in range(0, len(texts), args.batch):
            embedder.embed_documents(texts[i : i + args.batch])
            embedded[0] += len(texts[i : i + args.batch])
        done.set()

    t0 = time.perf_counter()
    worker = threading.Thread(target=ingest, daemon=True)
    worker.start()
    time.sleep(0.5)
    busy = time_queries(embedder, args.queries, args.gap_ms / 1000)
    worker.join()
    ingest_s = time.perf_counter() - t0

    print("| query embedding | p50 ms | p95 ms | max ms |")
    print("|---|---|---|---|")
    for name, xs in (("idle", idle), ("during ingestion", busy)):
        print(f"| {name} | {statistics.median(xs):.1f} | {pct(xs, 0.95):.1f} | {max(xs):.1f} |")
    print(f"\ningestion: {args.chunks} chunks in {ingest_s:.1f} s ({args.chunks / ingest_s:.1f} chunks/s) "
          f"with {args.queries} queries interleaved")


if __name__ == "__main__":
    main()
