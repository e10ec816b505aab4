"""Graph index benchmark: synthetic chunks with synthetic entities.

Measures build time (per-document upserts, journaled), snapshot save / load (pickle, against node-link JSON and
journal replay), resident memory, and search latency p50 / p95 with a tenant + ACL filter.

    python benchmarks/bench_graph.py --chunks 100000 --queries 300

Entities follow a Zipf-like law over a vocabulary (a few very common, most rare) and documents are topical (their
chunks draw from a shared pool), so the graph has hubs and local structure like real text.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import pickle
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.types import ChunkRecord, SearchFilter
from retrieval.graph import NetworkXGraphIndex
from retrieval.graph.persist import JOURNAL, SNAPSHOT, tenant_dir

WORDS = tuple(f"w{i}" for i in range(16))
TENANT = "bench"


def entity_name(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]} {WORDS[(i // len(WORDS)) % len(WORDS)]} {i}"


def zipf_pick(rng: random.Random, vocab: int) -> int:
    return min(int(rng.paretovariate(1.1)) - 1, vocab - 1)


def make_docs(
    n_chunks: int, per_doc: int, vocab: int, seed: int
) -> list[tuple[str, list[ChunkRecord], list[list[str]]]]:
    rng = random.Random(seed)
    docs = []
    for d in range(n_chunks // per_doc):
        doc_id = f"doc{d}"
        pool = [rng.randrange(vocab) for _ in range(8)]  # the document's topic entities
        chunks, ents = [], []
        for o in range(per_doc):
            names = [entity_name(rng.choice(pool)) for _ in range(3)]
            names += [entity_name(zipf_pick(rng, vocab)) for _ in range(3)]
            acl = ("eng",) if d % 3 == 0 else ()
            chunks.append(
                ChunkRecord(
                    id=f"{doc_id}-{o}",
                    tenant_id=TENANT,
                    document_id=doc_id,
                    document_version=1,
                    title="",
                    text="",
                    order=o,
                    section_path=(f"Section {o // 4}",),
                    acl_groups=acl,
                    doc_type="pdf",
                )
            )
            ents.append(names)
        docs.append((doc_id, chunks, ents))
    return docs


def timed(fn) -> tuple[float, object]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1] if len(values) > 1 else values[0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--chunks", type=int, default=100_000)
    ap.add_argument("--per-doc", type=int, default=10)
    ap.add_argument("--vocab", type=int, default=50_000)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    docs = make_docs(args.chunks, args.per_doc, args.vocab, args.seed)
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        index = NetworkXGraphIndex(root, compact_every=10**9)

        def build() -> None:
            for doc_id, chunks, ents in docs:
                index.upsert_document(doc_id, chunks, ents)

        t_build, _ = timed(build)
        tg = index._tenants[TENANT].graph
        g = tg.graph
        rows.append(
            ("chunks / nodes / edges", f"{index.count(TENANT)} / {g.number_of_nodes()} / {g.number_of_edges()}")
        )
        rows.append(("build (per-doc upserts, journaled)", f"{t_build:.1f} s ({len(docs) / t_build:.0f} docs/s)"))
        rows.append(("RSS growth after build", f"{(proc.memory_info().rss - rss0) / 2**20:.0f} MiB"))
        folder = tenant_dir(root, TENANT)
        t_replay, _ = timed(lambda: NetworkXGraphIndex(root))
        rows.append(
            ("load by journal replay", f"{t_replay:.2f} s ({(folder / JOURNAL).stat().st_size / 2**20:.0f} MiB)")
        )
        t_save, _ = timed(index.flush)
        rows.append(
            ("save: pickle snapshot (atomic)", f"{t_save:.2f} s ({(folder / SNAPSHOT).stat().st_size / 2**20:.0f} MiB)")
        )
        t_load, _ = timed(lambda: NetworkXGraphIndex(root))
        rows.append(("load: pickle snapshot", f"{t_load:.2f} s"))
        data = nx.node_link_data(g, edges="edges")
        for n in data["nodes"]:
            if "f" in n:
                n["f"] = [*n["f"][:5], None]
        path = root / "graph.json"
        t_js, _ = timed(lambda: path.write_text(json.dumps(data)))
        t_jl, _ = timed(lambda: nx.node_link_graph(json.loads(path.read_text()), edges="edges"))
        rows.append(("node-link JSON save / load (graph only)", f"{t_js:.2f} / {t_jl:.2f} s"))
        t_pd, blob = timed(lambda: pickle.dumps(g, protocol=pickle.HIGHEST_PROTOCOL))
        t_pl, _ = timed(lambda: pickle.loads(blob))  # type: ignore[arg-type]
        gc.disable()
        t_pl_nogc, _ = timed(lambda: pickle.loads(blob))  # type: ignore[arg-type]
        gc.enable()
        rows.append(("pickle save / load (graph only, in memory)", f"{t_pd:.2f} / {t_pl:.2f} s"))
        rows.append(("pickle load with the GC paused (graph only)", f"{t_pl_nogc:.2f} s"))

        rng = random.Random(args.seed + 1)
        flt = SearchFilter(TENANT, acl_groups=("sales",))
        lat, cpu, empty = [], [], 0
        for _ in range(args.queries):
            _, _, ents = docs[rng.randrange(len(docs))]
            names = rng.sample(ents[rng.randrange(len(ents))], 2)
            query = f"what is the relation between {names[0]} and {names[1]}?"
            c0 = time.process_time()
            dt, hits = timed(lambda q=query: index.search(q, flt, 10))
            cpu.append((time.process_time() - c0) * 1000)
            lat.append(dt * 1000)
            empty += not hits
        rows.append(
            ("search wall p50 / p95 / max (k=10, ACL)", f"{pct(lat, 50):.1f} / {pct(lat, 95):.1f} / {max(lat):.1f} ms")
        )
        rows.append(("search CPU time p50 / p95", f"{pct(cpu, 50):.1f} / {pct(cpu, 95):.1f} ms"))
        rows.append(("queries with no hit", f"{empty} / {args.queries}"))
        t_up, _ = timed(lambda: index.upsert_document(*docs[0]))
        t_del, _ = timed(lambda: index.delete_document(docs[1][0]))
        rows.append(("one upsert / delete on the full graph", f"{t_up * 1000:.1f} / {t_del * 1000:.1f} ms"))
    rows.append(("cpu count / load average", f"{os.cpu_count()} / {os.getloadavg()[0]:.1f}"))
    width = max(len(k) for k, _ in rows)
    print(f"{'measure':<{width}}  value")
    for k, v in rows:
        print(f"{k:<{width}}  {v}")


if __name__ == "__main__":
    main()
