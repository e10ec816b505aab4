"""Retrieval defaults chosen across datasets, never on one: leave-one-dataset-out (LODO) tables.

Usage::

    python -m evaluation.lodo [--eval-dir ../shared/eval] [--sets scifact,hotpotqa100,squad1,squad2]

For each dataset (SciFact; HotpotQA distractor sample of 100 questions; SQuAD v1.1 dev and SQuAD v2 dev-half as
paragraph retrieval, every 20th / 10th question) it computes, once, the top-100 run of

- every BM25 configuration of the grid (analysis: stemming and stop words on/off; title boost), on the real tantivy
  index (:class:`retrieval.keyword.TantivyKeywordIndex`);
- a reference BM25 (Lucene-style, k1 0.9, b 0.4, stemming + stop words, one field), computed here;
- dense retrieval with the bundled embedder (exact cosine; corpus and query embeddings cached on disk);

then every fusion method of :mod:`retrieval.fusion` over (BM25, dense). Tables:

1. BM25 grid, nDCG@10 per dataset, and the LODO choice: for each held-out dataset, the configuration with the best
   mean nDCG@10 over the *other* datasets, and what it scores on the held-out one.
2. Fusion: per dataset, BM25 / dense / each fusion method (nDCG@10; HotpotQA also all-supports@10), with the rule
   "hybrid >= max(BM25, dense)" checked per dataset.
3. With ``--prf``: dense pseudo-relevance feedback over z-score fusion (:func:`prf_table`), measured, not a default.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import pickle
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.types import Hit, SearchFilter
from evaluation.backends import by_document, default_embedder
from evaluation.beir import EVAL_TENANT, BeirDataset, cache_key, cached_array, doc_text, load_beir
from evaluation.metrics import mean_metrics
from retrieval.fusion import FUSION_METHODS, fuse
from retrieval.keyword import TantivyKeywordIndex
from retrieval.keyword.tantivy_index import english_analyzer
from retrieval.protocols import Embedder

log = logging.getLogger(__name__)

#: name -> (folder under the eval dir, keep every n-th query)
DATASETS: dict[str, tuple[str, int]] = {
    "scifact": ("beir_scifact", 1),
    "hotpotqa100": ("hotpotqa_distractor_sample100", 1),
    "squad2": ("squad_v2.0_dev_devhalf", 10),
    "squad1": ("squad_v1.1_dev", 20),
}
DEPTH = 100
#: Bump when the runs computed per set change (invalidates ``--reuse-runs`` caches).
RUNS_VERSION = "v1"


@dataclass(frozen=True, slots=True)
class Bm25Config:
    stemming: bool
    stopwords: bool
    title_boost: float

    @property
    def label(self) -> str:
        analysis = "+".join(n for n, on in (("stem", self.stemming), ("stop", self.stopwords)) if on) or "plain"
        return f"{analysis},title={self.title_boost:g}"


#: The shipped default (TantivyKeywordIndex's defaults).
DEFAULT_BM25 = Bm25Config(stemming=True, stopwords=True, title_boost=0.25)
GRID = [Bm25Config(st, sw, tb) for st in (True, False) for sw in (True, False) for tb in (0.0, 0.25, 0.5, 1.0)]

Runs = dict[str, list[Hit]]  # query id -> hits, best first


def default_eval_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_DIR", Path(__file__).resolve().parents[1].parent / "shared" / "eval"))


def load_set(eval_dir: Path, name: str) -> BeirDataset:
    folder, stride = DATASETS[name]
    ds = load_beir(eval_dir / folder)
    keep = list(ds.queries)[::stride]
    ds.queries = {q: ds.queries[q] for q in keep}
    ds.qrels = {q: ds.qrels[q] for q in keep}
    ds.name = name
    return ds


def bm25_runs(ds: BeirDataset, workdir: Path) -> dict[Bm25Config, Runs]:
    """The top-``DEPTH`` run of every grid configuration (one tantivy index per analysis)."""
    out: dict[Bm25Config, Runs] = {}
    flt = SearchFilter(tenant_id=EVAL_TENANT)
    for stemming in (True, False):
        for stopwords in (True, False):
            idx = TantivyKeywordIndex(workdir / f"bm25-{stemming}-{stopwords}", stemming=stemming, stopwords=stopwords)
            idx.upsert_many([(d, ds.chunks[a:b]) for d, a, b in by_document(ds.chunks)])
            for cfg in GRID:
                if (cfg.stemming, cfg.stopwords) != (stemming, stopwords):
                    continue
                idx.title_boost = cfg.title_boost
                out[cfg] = {q: idx.search(text, flt, DEPTH) for q, text in ds.queries.items()}
            idx.close()
    return out


def reference_bm25_runs(ds: BeirDataset, *, k1: float = 0.9, b: float = 0.4) -> Runs:
    """Lucene-style BM25 (idf ``ln(1 + (N - df + .5) / (df + .5))``) over title + text, stemming + stop words."""
    analyzer = english_analyzer()
    docs = [Counter(analyzer.analyze(doc_text(c))) for c in ds.chunks]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    avgdl = float(lengths.mean()) if len(docs) else 1.0
    postings: dict[str, list[tuple[int, int]]] = {}
    for i, d in enumerate(docs):
        for term, tf in d.items():
            postings.setdefault(term, []).append((i, tf))
    n = len(docs)
    norm = k1 * (1 - b + b * lengths / avgdl)
    out: Runs = {}
    for q, text in ds.queries.items():
        scores = np.zeros(n)
        for term in set(analyzer.analyze(text)):
            plist = postings.get(term)
            if not plist:
                continue
            idf = math.log(1 + (n - len(plist) + 0.5) / (len(plist) + 0.5))
            ids = np.fromiter((i for i, _ in plist), dtype=np.int64)
            tfs = np.fromiter((tf for _, tf in plist), dtype=np.float64)
            scores[ids] += idf * tfs * (k1 + 1) / (tfs + norm[ids])
        top = np.argsort(-scores, kind="stable")[:DEPTH]
        out[q] = [Hit(ds.chunks[i].id, float(scores[i])) for i in top if scores[i] > 0]
    return out


def dense_runs(ds: BeirDataset, embedder: Embedder, cache_dir: Path | None) -> Runs:
    docs, queries = _embeddings(ds, embedder, cache_dir)
    qids = list(ds.queries)
    sims = queries @ docs.T
    return {q: _top_hits(ds, sims[row]) for row, q in enumerate(qids)}


def _top_hits(ds: BeirDataset, sims: np.ndarray) -> list[Hit]:
    """The ``DEPTH`` passages of ``ds`` with the highest cosine in ``sims`` (one per passage), best first."""
    top = np.argsort(-sims, kind="stable")[:DEPTH]
    return [Hit(ds.chunks[i].id, float(sims[i])) for i in top]


def _embed_queries(embedder: Embedder, qids: Sequence[str], ds: BeirDataset) -> np.ndarray:
    from retrieval.embedders import SentenceTransformerEmbedder

    if isinstance(embedder, SentenceTransformerEmbedder):  # its embed_query is embed_documents of one text: batch it
        return embedder.embed_documents([ds.queries[q] for q in qids])
    return np.stack([embedder.embed_query(ds.queries[q]) for q in qids])


def measures_for(ds: BeirDataset) -> list[tuple[str, int]]:
    multi_hop = all(len(r) >= 2 for r in ds.qrels.values())
    return [("ndcg", 10)] + ([("all_rel", 10)] if multi_hop else [])


def score(ds: BeirDataset, runs: Runs) -> dict[str, float]:
    return mean_metrics({q: [h.chunk_id for h in hits] for q, hits in runs.items()}, ds.qrels, measures_for(ds))


def fused_runs(method: str, bm25: Runs, dense: Runs) -> Runs:
    out: Runs = {}
    for q in bm25.keys() | dense.keys():
        fused = fuse({"keyword": bm25.get(q, []), "vector": dense.get(q, [])}, method=method)
        out[q] = [Hit(f.chunk_id, f.score) for f in fused[:DEPTH]]
    return out


@dataclass(slots=True)
class SetRuns:
    ds: BeirDataset
    bm25: dict[Bm25Config, Runs]
    reference: Runs
    dense: Runs


def collect(names: Sequence[str], eval_dir: Path, cache_dir: Path | None, embedder: Embedder) -> list[SetRuns]:
    out = []
    for name in names:
        t = time.perf_counter()
        ds = load_set(eval_dir, name)
        with tempfile.TemporaryDirectory(prefix="kbqa-lodo-") as tmp:
            bm25 = bm25_runs(ds, Path(tmp))
        out.append(SetRuns(ds, bm25, reference_bm25_runs(ds), dense_runs(ds, embedder, cache_dir)))
        log.info("%s: %d queries, %d docs in %.0fs", name, len(ds.queries), len(ds.chunks), time.perf_counter() - t)
    return out


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def lodo_table(sets: Sequence[SetRuns]) -> tuple[str, Bm25Config]:
    """BM25 grid per dataset + the LODO choice per held-out set; returns (table, choice over all sets)."""
    ndcg = {(s.ds.name, cfg): score(s.ds, runs)["ndcg@10"] for s in sets for cfg, runs in s.bm25.items()}
    names = [s.ds.name for s in sets]

    def best(on: Sequence[str]) -> Bm25Config:
        return max(GRID, key=lambda c: (sum(ndcg[(n, c)] for n in on) / len(on), c == DEFAULT_BM25))

    rows = [[cfg.label + (" (default)" if cfg == DEFAULT_BM25 else ""), *(f"{ndcg[(n, cfg)]:.4f}" for n in names),
             f"{sum(ndcg[(n, cfg)] for n in names) / len(names):.4f}"] for cfg in GRID]
    ref = {s.ds.name: score(s.ds, s.reference)["ndcg@10"] for s in sets}
    rows.append(["reference BM25 (k1 0.9, b 0.4)", *(f"{ref[n]:.4f}" for n in names),
                 f"{sum(ref.values()) / len(ref):.4f}"])
    grid = _table(["BM25 nDCG@10", *names, "mean"], rows)
    lodo_rows = []
    for held in names:
        others = [n for n in names if n != held]
        choice = best(others) if others else DEFAULT_BM25
        lodo_rows.append([held, choice.label, f"{ndcg[(held, choice)]:.4f}", f"{ndcg[(held, DEFAULT_BM25)]:.4f}",
                          f"{ref[held]:.4f}", f"{ndcg[(held, choice)] - ref[held]:+.4f}"])
    lodo = _table(["held out", "chosen on the others", "its nDCG@10", "default's", "reference", "chosen - ref"],
                  lodo_rows)
    return grid + "\n\n" + lodo, best(names)


def fusion_table(sets: Sequence[SetRuns], cfg: Bm25Config) -> str:
    """Every fusion method per set against BM25 and dense, then the leave-one-dataset-out choice of method."""
    rows = []
    methods = list(FUSION_METHODS)
    ndcg: dict[tuple[str, str], float] = {}
    for s in sets:
        base = {"bm25": score(s.ds, s.bm25[cfg]), "dense": score(s.ds, s.dense)}
        fusedm = {m: score(s.ds, fused_runs(m, s.bm25[cfg], s.dense)) for m in methods}
        ndcg.update({(s.ds.name, m): fusedm[m]["ndcg@10"] for m in methods})
        for measure in measures_for(s.ds):
            key = f"{measure[0]}@{measure[1]}"
            best_single = max(base["bm25"][key], base["dense"][key])
            cells = [f"{fusedm[m][key]:.4f}" + ("" if fusedm[m][key] >= best_single else " ✗") for m in methods]
            rows.append([s.ds.name, key, f"{base['bm25'][key]:.4f}", f"{base['dense'][key]:.4f}", *cells])
    table = _table(["dataset", "measure", "bm25", "dense", *methods], rows) + \
        "\n(✗: below the best single retriever on that set)"
    names = [s.ds.name for s in sets]
    lodo_rows = []
    for held in names:
        others = [n for n in names if n != held] or names
        choice = max(methods, key=lambda m: sum(ndcg[(n, m)] for n in others))
        lodo_rows.append([held, choice, f"{ndcg[(held, choice)]:.4f}", f"{ndcg[(held, 'rrf')]:.4f}"])
    overall = max(methods, key=lambda m: sum(ndcg[(n, m)] for n in names))
    return table + "\n\n" + _table(["held out", "fusion chosen on the others", "its nDCG@10", "rrf"], lodo_rows) + \
        f"\n\nFusion method with the best mean nDCG@10 over all sets: {overall}"


#: Dense pseudo-relevance feedback grid: (feedback passages, weight). Measured, not shipped (evaluation/RESULTS.md).
PRF_GRID = [(k, beta) for k in (1, 2, 3) for beta in (0.1, 0.25, 0.5)]


def _embeddings(ds: BeirDataset, embedder: Embedder, cache_dir: Path | None) -> tuple[np.ndarray, np.ndarray]:
    """The corpus and query vectors :func:`dense_runs` cached (same keys)."""
    qids = list(ds.queries)

    def corpus() -> np.ndarray:
        return embedder.embed_documents([doc_text(c) for c in ds.chunks])

    def asked() -> np.ndarray:
        return _embed_queries(embedder, qids, ds)

    key = cache_key("emb", embedder.model_name, embedder.model_version, ds.corpus_hash, "v1")
    qkey = cache_key("qemb", embedder.model_name, embedder.model_version, ds.corpus_hash, ds.name, str(len(qids)))
    return (np.asarray(cached_array(cache_dir, key, len(ds.chunks), corpus), np.float32),
            np.asarray(cached_array(cache_dir, qkey, len(qids), asked), np.float32))


def prf_table(sets: Sequence[SetRuns], embedder: Embedder, cache_dir: Path | None, cfg: Bm25Config) -> str:
    """Dense pseudo-relevance feedback on top of z-score fusion: the query vector plus ``beta`` x the mean vector of
    the first ``k`` fused passages (normalised) searches again; the new dense list is fused with BM25. Per dataset
    nDCG@10 and the leave-one-dataset-out choice among "off" and :data:`PRF_GRID`."""
    ndcg: dict[tuple[str, str], float] = {}
    labels = ["off"] + [f"k={k},beta={b:g}" for k, b in PRF_GRID]
    for s in sets:
        ds = s.ds
        docs, queries = _embeddings(ds, embedder, cache_dir)
        qids = list(ds.queries)
        row = {c.id: i for i, c in enumerate(ds.chunks)}
        first = fused_runs("zscore", s.bm25[cfg], s.dense)
        ndcg[(ds.name, "off")] = score(ds, first)["ndcg@10"]
        for (k, beta), label in zip(PRF_GRID, labels[1:], strict=True):
            dense: Runs = {}
            for r, q in enumerate(qids):
                fb = [row[h.chunk_id] for h in first.get(q, [])[:k]]
                vec = queries[r] + beta * docs[fb].mean(axis=0) if fb else queries[r]
                dense[q] = _top_hits(ds, docs @ (vec / np.linalg.norm(vec)))
            ndcg[(ds.name, label)] = score(ds, fused_runs("zscore", s.bm25[cfg], dense))["ndcg@10"]
    names = [s.ds.name for s in sets]
    rows = [[label, *(f"{ndcg[(n, label)]:.4f}" for n in names),
             f"{sum(ndcg[(n, label)] for n in names) / len(names):.4f}"] for label in labels]
    lodo_rows = []
    for held in names:
        others = [n for n in names if n != held] or names
        choice = max(labels, key=lambda lb: (sum(ndcg[(n, lb)] for n in others), lb == "off"))
        lodo_rows.append([held, choice, f"{ndcg[(held, choice)]:.4f}", f"{ndcg[(held, 'off')]:.4f}"])
    return _table(["hybrid (z-score) nDCG@10, dense PRF", *names, "mean"], rows) + "\n\n" + \
        _table(["held out", "PRF chosen on the others", "its nDCG@10", "off"], lodo_rows)


def main(argv: Sequence[str] | None = None, *, embedder_factory: Callable[[], Embedder] = default_embedder) -> None:
    ap = argparse.ArgumentParser(prog="python -m evaluation.lodo", description=__doc__.splitlines()[0])
    ap.add_argument("--eval-dir", type=Path, default=default_eval_dir())
    ap.add_argument("--sets", default=",".join(DATASETS), help=f"comma-separated, from {list(DATASETS)}")
    ap.add_argument("--cache-dir", type=Path,
                    default=Path(os.environ.get("KBQA_EVAL_CACHE", Path.home() / ".cache" / "kbqa" / "eval")))
    ap.add_argument("--reuse-runs", action="store_true",
                    help="keep the per-query runs in the cache dir and reuse them (for iterating on fusion only)")
    ap.add_argument("--prf", action="store_true",
                    help="also print the dense pseudo-relevance feedback table (measured, not a default)")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    names = [n for n in args.sets.split(",") if n]
    missing = [n for n in names if not (args.eval_dir / DATASETS[n][0]).is_dir()]
    if missing:
        raise SystemExit(f"evaluation data not found for {missing} under {args.eval_dir} (set KBQA_EVAL_DIR)")
    sets = []
    for name in names:  # one set at a time, so a run cut short keeps the sets it finished
        runs_cache = args.cache_dir / f"lodo-runs-{cache_key(name, RUNS_VERSION)}.pkl" if args.reuse_runs else None
        if runs_cache is not None and runs_cache.exists():
            sets.append(pickle.loads(runs_cache.read_bytes()))  # noqa: S301 - our own cache file
            continue
        sets += collect([name], args.eval_dir, args.cache_dir, embedder_factory())
        if runs_cache is not None:
            runs_cache.parent.mkdir(parents=True, exist_ok=True)
            runs_cache.write_bytes(pickle.dumps(sets[-1]))
    table, choice = lodo_table(sets)
    print(table)
    print(f"\nBM25 configuration with the best mean over all sets: {choice.label} (the shipped default is "
          f"{DEFAULT_BM25.label}; change it only when the held-out scores above say so)\n")
    print(fusion_table(sets, DEFAULT_BM25))
    if args.prf:
        print("\n" + prf_table(sets, embedder_factory(), args.cache_dir, DEFAULT_BM25))


if __name__ == "__main__":
    main()
