"""Query latency while ingestion runs in the same process (embedded mode), vs idle.

1. Query embedding: one embedder (the bundled MiniLM) is shared, as in ``kbqa serve`` (with its query lane, a second
   model instance for queries; ``--one-instance``: without it, queries go first between small slices of the shared
   instance): a background thread at the ingest workers' CPU priority embeds document chunks the way the ingest
   pipeline does (``embed_documents`` on batches of ``--batch`` texts) while the main thread times ``embed_query``
   calls, one every ``--gap-ms``.
2. Whole search (``--search``, the default): the embedded container of ``kbqa serve`` (SQLite, tantivy, in-process
   vectors, the InlineDispatcher's ingest workers; the graph only when ``KBQA_INDEX__GRAPH_BACKEND`` enables it) over
   the demo knowledge base; ``--queries`` hybrid searches (keyword + vector, title links, fusion; what
   ``GET /api/v1/search`` runs, without HTTP) idle, then the same
   while ``--docs`` generated documents of another tenant ingest through the real pipeline.

Prints p50/p95/max idle and during ingestion, their ratio, and the ingestion throughput.

    python benchmarks/bench_query_during_ingest.py [--queries 40] [--chunks 800] [--docs 60] [--no-search]
        [--one-instance] [--answers]

``--answers`` also asks each question after its search (the answer pipeline of ``POST /api/v1/ask``, extractive) and
prints the time to the first answer token idle and during the ingest.

The whole-search part runs what the settings say (``KBQA_EMBEDDING__QUERY_INSTANCE=false`` and
``KBQA_INGESTION__INLINE_NICE=0`` turn the query lane and the lower ingest priority off).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.settings import EmbeddingSettings, Settings  # noqa: E402
from ingestion.executors import lower_priority  # noqa: E402
from retrieval.embedders import build_embedder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

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


def spread(xs: list[float]) -> str:
    """p50 | p95 | max of ``xs``, as table cells."""
    return f"{statistics.median(xs):.1f} | {pct(xs, 0.95):.1f} | {max(xs):.1f}"


def time_queries(embedder, n: int, gap_s: float) -> list[float]:  # noqa: ANN001
    out = []
    for i in range(n):
        t = time.perf_counter()
        embedder.embed_query(QUESTIONS[i % len(QUESTIONS)])
        out.append((time.perf_counter() - t) * 1000)
        time.sleep(gap_s)
    return out


def product_sheet(i: int) -> bytes:
    """A generated document of about 12 chunks: sections of prose like a product manual's."""
    parts = [f"# Product {i} manual"]
    for s in range(12):
        parts.append(f"## Section {s}\n\n" + " ".join(
            f"Model {i}-{s} keeps a local copy of rule {k}, so automations run when the connection drops; "
            f"the event log uploads later and the app shows missed alert {k}." for k in range(8)))
    return "\n\n".join(parts).encode()


def search_during_ingest(queries: int, docs: int, gap_s: float, answers: bool = False) -> None:
    from app.cli import migrate_database
    from app.generation.events import Token
    from app.main import build_container
    from core.types import SearchFilter

    with tempfile.TemporaryDirectory(prefix="kbqa-bench-qdi-") as tmp:
        settings = Settings(_env_file=None, data_dir=Path(tmp))  # type: ignore[call-arg]
        migrate_database(settings)
        c = build_container(settings)
        for f in sorted((ROOT / "demo" / "kb").glob("*.*")):
            c.ingest.submit(tenant_id="default", filename=f.name, data=f.read_bytes())
        c.dispatcher.wait()
        flt = SearchFilter(tenant_id="default")

        stages: dict[str, dict[str, list[float]]] = {"idle": {}, "busy": {}}
        first_token: dict[str, list[float]] = {"idle": [], "busy": []}

        async def answer(question: str) -> float:
            """Milliseconds to the first answer token (the extractive default: retrieval, unit choice, composing)."""
            t = time.perf_counter()
            async for e in c.answers.run(question, flt=flt, history=[], request_id="b", conversation_id="b",
                                         message_id="b", top_k=settings.retrieval.top_k):
                if isinstance(e, Token):
                    return (time.perf_counter() - t) * 1000
            return (time.perf_counter() - t) * 1000

        def timed(n: int, until: threading.Event | None = None) -> list[float]:
            out: list[float] = []
            i = 0
            per = stages["busy" if until is not None else "idle"]
            while (until is None and i < n) or (until is not None and not until.is_set() and i < 10 * n):
                t = time.perf_counter()
                result = asyncio.run(c.retriever.retrieve(QUESTIONS[i % len(QUESTIONS)], flt, 8))
                out.append((time.perf_counter() - t) * 1000)
                for stage, ms in result.timings_ms.items():
                    per.setdefault(stage, []).append(ms)
                if answers:
                    first_token["busy" if until is not None else "idle"].append(
                        asyncio.run(answer(QUESTIONS[i % len(QUESTIONS)])))
                i += 1
                time.sleep(gap_s)
            return out

        timed(4)  # warm up
        idle = timed(queries)
        done = threading.Event()
        t0 = time.perf_counter()
        for i in range(docs):
            c.ingest.submit(tenant_id="bulk", filename=f"sheet-{i}.md", data=product_sheet(i))

        def drain() -> None:
            c.dispatcher.wait()
            done.set()

        threading.Thread(target=drain, daemon=True).start()
        busy = timed(queries, until=done)
        done.wait()
        ingest_s = time.perf_counter() - t0
        print("\n| whole search (hybrid, embedded) | searches | p50 ms | p95 ms | max ms |")
        print("|---|---|---|---|---|")
        for name, xs in (("idle", idle), ("during a bulk ingest", busy)):
            print(f"| {name} | {len(xs)} | {spread(xs)} |")
        print("\n| stage p95 ms | idle | during |\n|---|---|---|")
        for stage in stages["busy"]:
            idle_ms = stages["idle"].get(stage) or [0.0]
            print(f"| {stage} | {pct(idle_ms, 0.95):.1f} | {pct(stages['busy'][stage], 0.95):.1f} |")
        print(f"\np95 during / idle: {pct(busy, 0.95) / pct(idle, 0.95):.2f}x; p50: "
              f"{statistics.median(busy) / statistics.median(idle):.2f}x")
        if answers:
            print("\n| first answer token (extractive), after each search | answers | p50 ms | p95 ms | max ms |")
            print("|---|---|---|---|---|")
            for name, key in (("idle", "idle"), ("during a bulk ingest", "busy")):
                print(f"| {name} | {len(first_token[key])} | {spread(first_token[key])} |")
            print(f"p95 during / idle: {pct(first_token['busy'], 0.95) / pct(first_token['idle'], 0.95):.2f}x")
        print(f"ingestion: {docs} documents in {ingest_s:.1f} s ({docs / ingest_s:.2f} docs/s), searches interleaved")
        c.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--chunks", type=int, default=800)
    ap.add_argument("--batch", type=int, default=32, help="the pipeline's embedding batch (settings.embedding)")
    ap.add_argument("--gap-ms", type=float, default=100)
    ap.add_argument("--docs", type=int, default=60, help="generated documents ingested during the search run")
    ap.add_argument("--no-search", action="store_true", help="only the query-embedding measure")
    ap.add_argument("--one-instance", action="store_true", help="query embedding without the query lane")
    ap.add_argument("--answers", action="store_true",
                    help="also ask each question after its search and time the first answer token (more load)")
    args = ap.parse_args()
    embedder = build_embedder(EmbeddingSettings(), query_lane=not args.one_instance)
    embedder.embed_query("warm up")
    idle = time_queries(embedder, args.queries, args.gap_ms / 1000)

    done = threading.Event()
    embedded = [0]

    def ingest() -> None:
        lower_priority(Settings().ingestion.inline_nice)  # as an ingest worker thread
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
        print(f"| {name} | {spread(xs)} |")
    print(f"\ningestion: {args.chunks} chunks in {ingest_s:.1f} s ({args.chunks / ingest_s:.1f} chunks/s) "
          f"with {args.queries} queries interleaved")
    if not args.no_search:
        search_during_ingest(args.queries, args.docs, args.gap_ms / 1000, args.answers)


if __name__ == "__main__":
    main()
