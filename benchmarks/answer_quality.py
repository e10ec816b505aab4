"""Answer quality through the real product path (ingestion -> hybrid retrieval -> answer pipeline), per evaluation set.

    python benchmarks/answer_quality.py [--sets demo,doc2dial,squad2] [--backend extractive[,local,vllm]]
        [--limit N] [--ids s003,s014] [--server-url URL] [--data-dir DIR] [--show]

- ``demo``: ``demo/support_questions.jsonl`` on ``demo/kb`` (support-style questions written for the demo KB):
  expected section cited, must-contain facts present, unanswerable -> not found / partial, follow-ups (two turns).
- ``doc2dial``: ``../shared/eval/doc2dial_dev`` (va.gov and DMV help pages, real first user questions); each domain is
  one tenant's KB. Grounding section cited (its page-section file), share of the grounding passage's content words
  that the answer carries.
- ``dialogues``: the doc2dial dialogues of the same pages (``dialogues.jsonl``), asked turn by turn with the
  conversation so far; later turns scored: the dialogue's page cited, share of the grounding passage in the answer.
- ``squad2``: ``../shared/eval/squad_v2.0_dev_devhalf`` (15 articles); ``--n`` answerable + ``--n`` adversarial
  unanswerable questions: answerable answer contains gold, false refusals (not found), unanswerable -> not found /
  partial.

Every set also reports the share of cited sentences the support check marks supported, and p50/p95 of time to
sources and to first token. ``--data-dir`` keeps the ingested indexes between runs (one sub-folder per set).
``--backend`` takes a comma list and prints one row per backend and set: ``local`` is llama-cpp-python in process
(``KBQA_GENERATION__GGUF_PATH`` or the packaged GGUF), ``vllm`` any OpenAI-compatible server at ``--server-url``
(vLLM, or ``python -m llama_cpp.server``). ``--limit N`` asks an even spread of N demo questions and N doc2dial
questions (half per domain): generative backends on 2 cores need minutes per question set, not hours.

Retrieval runs with a generous per-retriever timeout (30 s) so that a busy machine measures answer quality, not
skipped retrievers; ``degraded`` counts the answers whose retrieval was degraded anyway. Generative backends get a
300 s first-token timeout for the same reason; ``generated_answers`` counts the answers the model wrote (the rest
are refusals decided before generation, or the extractive fallback).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.cli import migrate_database  # noqa: E402
from app.generation.events import Citations, Done, Sources, Token  # noqa: E402
from app.generation.text import content_terms  # noqa: E402
from app.main import build_container  # noqa: E402
from core.settings import Settings  # noqa: E402
from core.types import SearchFilter  # noqa: E402

MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")
SPACE = re.compile(r"\s+")


QUALITY_TIMEOUT_S = 30.0
SERVER_URL = os.environ.get("KBQA_TEST_VLLM_URL", "")
CONTEXT_WINDOW: int | None = None
#: ``--sentence-weight W`` (> 0): ingest with sentence vectors and score the dense list by them (0: the defaults)
SENTENCE_WEIGHT = 0.0


def generation(backend: str) -> dict[str, Any]:
    """Generation settings for a backend name (``vllm``: the server at ``--server-url`` / ``KBQA_TEST_VLLM_URL``)."""
    out: dict[str, Any] = {"backend": backend}
    if backend != "extractive":  # quality of the model's answers, not of the extractive fallback on a slow machine
        out["first_token_timeout_s"] = QUALITY_TIMEOUT_S * 10
    if backend == "vllm" and SERVER_URL:
        out["vllm_url"] = SERVER_URL
    if backend != "extractive" and CONTEXT_WINDOW:
        out["context_window"] = CONTEXT_WINDOW
    return out


def spread(items: list[Any], limit: int | None) -> list[Any]:
    """An even spread of at most ``limit`` items (all when ``limit`` is None)."""
    if not limit or limit >= len(items):
        return items
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def eval_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_DIR", ROOT.parent / "shared" / "eval"))


def norm(text: str) -> str:
    return SPACE.sub(" ", MARKER.sub("", text).replace("*", "")).strip().lower()


def pct(values: list[float], q: float) -> float:
    values = sorted(v for v in values if v is not None)
    if not values:
        return float("nan")
    return round(values[min(len(values) - 1, int(round(q * (len(values) - 1))))], 1)


@dataclass(slots=True)
class Asked:
    answer: str
    outcome: str
    sources: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    unit: dict[str, Any] | None
    sources_ms: float
    first_token_ms: float | None
    done: Done = field(repr=False)

    def cited_documents(self) -> set[str]:
        return {c["document_id"] for c in self.citations}

    def cited_sections(self) -> set[tuple[str, str]]:
        return {(c["document_id"], c["section"].split(" > ")[-1] if c["section"] else "") for c in self.citations}


class KB:
    """A container over one data dir; documents ingested once (a data dir that already has them is reused)."""

    def __init__(self, data_dir: Path, backend: str) -> None:
        data_dir.mkdir(parents=True, exist_ok=True)
        self.settings = Settings(_env_file=None, data_dir=data_dir, generation=generation(backend),
                                 retrieval={"timeout_s": QUALITY_TIMEOUT_S, "sentence_weight": SENTENCE_WEIGHT},
                                 ingestion={"sentence_vectors": SENTENCE_WEIGHT > 0})
        migrate_database(self.settings)
        self.container = build_container(self.settings)
        self.filenames: dict[str, str] = {}  # document id -> file name

    def ingest(self, tenant: str, files: list[tuple[str, bytes]]) -> None:
        for name, data in files:
            sub = self.container.ingest.submit(tenant_id=tenant, filename=name, data=data)
            self.filenames[sub.document.id] = name
        self.container.dispatcher.wait()

    async def ask(self, tenant: str, question: str, history: list[dict[str, Any]] | None = None) -> Asked:
        t0 = time.perf_counter()
        sources: list[dict[str, Any]] = []
        citations: list[dict[str, Any]] = []
        sources_ms, first_ms, done = 0.0, None, None
        async for e in self.container.answers.run(
            question, flt=SearchFilter(tenant_id=tenant), history=history or [], request_id="q",
            conversation_id="q", message_id="q", top_k=self.settings.retrieval.top_k,
        ):
            now = (time.perf_counter() - t0) * 1000
            if isinstance(e, Sources):
                sources, sources_ms = e.sources, now
            elif isinstance(e, Token) and first_ms is None:
                first_ms = now
            elif isinstance(e, Citations):
                citations = e.citations
            elif isinstance(e, Done):
                done = e
        assert done is not None
        return Asked(done.answer, done.outcome, sources, citations, done.unit, sources_ms, first_ms, done)

    def close(self) -> None:
        close = getattr(self.container, "close", None)
        if close:
            close()


def assistant_turn(r: Asked) -> dict[str, Any]:
    """The answer as a history turn, the way a stored conversation carries it (with the section it came from)."""
    turn: dict[str, Any] = {"role": "assistant", "content": r.answer}
    if r.unit:
        turn["unit"] = {k: r.unit.get(k) for k in ("document_id", "label", "chunk_ids")}
    return turn


def common(rows: list[Asked]) -> dict[str, Any]:
    sup = [c["supported"] for r in rows for c in r.citations]
    return {
        "degraded": sum(bool(r.done.retrieval_degraded) for r in rows),
        "generated_answers": sum(r.done.mode == "generated" for r in rows),
        "cited_sentences_supported": round(sum(sup) / max(len(sup), 1), 3),
        "sources_ms_p50_p95": (pct([r.sources_ms for r in rows], 0.5), pct([r.sources_ms for r in rows], 0.95)),
        "first_token_ms_p50_p95": (pct([r.first_token_ms for r in rows], 0.5),
                                   pct([r.first_token_ms for r in rows], 0.95)),
    }


def section_cited(want: set[tuple[str, str]], r: Asked) -> bool:
    """An expected (document, heading) is cited: a citation of that document whose section path ends with the
    heading, or whose passage holds the heading as a line of its own (the chunker merges small sections into their
    parent, and the merged chunk keeps each heading)."""
    by_n = {s["n"]: s for s in r.sources}
    for c in r.citations:
        path = [p.strip() for p in c["section"].split(" > ")] if c["section"] else []
        lines = {ln.strip() for ln in by_n.get(c["n"], {}).get("text", "").splitlines()}
        for doc, heading in want:
            if c["document_id"] == doc and (heading in path[-1:] or heading in lines):
                return True
    return False


# --- demo support set -------------------------------------------------------------------------------------------------
async def run_demo(kb: KB, show: bool, limit: int | None = None, ids: set[str] | None = None) -> dict[str, Any]:
    path = ROOT / "demo" / "support_questions.jsonl"
    items = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    items = spread([it for it in items if not ids or it["id"] in ids], limit)
    if not kb.filenames:
        files = sorted(p for p in (ROOT / "demo" / "kb").iterdir()
                       if p.is_file() and p.suffix in {".md", ".html", ".docx", ".pdf"})
        kb.ingest("default", [(p.name, p.read_bytes()) for p in files])
    by_name = {v: k for k, v in kb.filenames.items()}
    rows: list[Asked] = []
    sec_ok = fact_ok = n_facts = neg_ok = n_neg = n_pos = fu_ok = n_fu = 0
    for it in items:
        history: list[dict[str, str]] = []
        if it.get("previous"):
            first = await kb.ask("default", it["previous"])
            history = [{"role": "user", "content": it["previous"]}, assistant_turn(first)]
        r = await kb.ask("default", it["question"], history)
        rows.append(r)
        if not it["answerable"]:
            n_neg += 1
            ok = r.outcome in ("not_found", "partial")
            neg_ok += ok
        else:
            n_pos += 1
            want = {(by_name.get(e["file"], "?"), e["section"]) for e in it["expected"]}
            sec = section_cited(want, r)
            facts = [f for f in it["must_contain"] if norm(f) in norm(r.answer)]
            sec_ok += sec
            fact_ok += len(facts)
            n_facts += len(it["must_contain"])
            ok = sec and len(facts) == len(it["must_contain"])
            if it.get("previous"):
                n_fu += 1
                fu_ok += ok
        if show or not ok:
            detail = "" if not it["answerable"] else (
                f" section={'ok' if sec else 'MISSED ' + str([e['section'] for e in it['expected']])}"
                f" facts_missing={[f for f in it['must_contain'] if norm(f) not in norm(r.answer)]}")
            print(f"{'OK ' if ok else 'BAD'} [{it['id']}] {it['question']!r} -> {r.outcome}{detail}\n    "
                  f"{r.answer[:600]!r}", flush=True)
    return {
        "set": "demo support", "questions": len(items),
        "expected_section_cited": round(sec_ok / max(n_pos, 1), 3),
        "must_contain_facts": round(fact_ok / max(n_facts, 1), 3),
        "unanswerable_not_found_or_partial": round(neg_ok / max(n_neg, 1), 3),
        "followups_section_and_facts": round(fu_ok / max(n_fu, 1), 3),
        **common(rows),
    }


# --- doc2dial -----------------------------------------------------------------------------------------------------
def ingest_domain(kb: KB, dom: str) -> Path:
    """The domain's folder; its pages are ingested as tenant ``dom`` unless the KB already has them (file names are
    kept as ``dom/name``)."""
    d = eval_dir() / "doc2dial_dev" / dom
    if dom not in {n.split("/")[0] for n in kb.filenames.values()}:
        files = sorted((d / "docs").glob("*.txt"))
        kb.ingest(dom, [(f"{p.name}", p.read_bytes()) for p in files])
        for doc_id, name in list(kb.filenames.items()):
            if "/" not in name and (d / "docs" / name).exists():
                kb.filenames[doc_id] = f"{dom}/{name}"
    return d


def grounding_share(grounding: str, answer: str) -> float:
    """Share of the grounding passage's content words that the answer (citation markers dropped) carries."""
    g = set(content_terms(grounding))
    return len(g & set(content_terms(MARKER.sub("", answer)))) / max(len(g), 1)


async def run_doc2dial(
    kb: KB, show: bool, domains: tuple[str, ...] = ("va", "dmv"), limit: int | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {"set": "doc2dial dev"}
    all_rows: list[Asked] = []
    cited_all: list[bool] = []
    share_all: list[float] = []
    for dom in domains:
        d = ingest_domain(kb, dom)
        by_name = {v: k for k, v in kb.filenames.items()}
        qs = [json.loads(x) for x in (d / "questions.jsonl").read_text().splitlines() if x.strip()]
        qs = spread([q for q in qs if not q["agent_response_is_question"]], limit // len(domains) if limit else None)
        cited, shares = [], []
        for q in qs:
            r = await kb.ask(dom, q["question"])
            all_rows.append(r)
            gold = by_name.get(f"{dom}/{Path(q['doc_file']).name}")
            ok = gold in r.cited_documents()
            share = grounding_share(q["grounding_text"], r.answer)
            cited.append(ok)
            shares.append(share)
            if show or not ok:
                print(f"{'OK ' if ok else 'BAD'} {dom} {q['question'][:90]!r} share={share:.2f}\n    "
                      f"{r.answer[:300]!r}", flush=True)
        out[f"{dom}_section_cited"] = round(sum(cited) / max(len(cited), 1), 3)
        out[f"{dom}_grounding_share"] = round(sum(shares) / max(len(shares), 1), 3)
        cited_all += cited
        share_all += shares
    out["section_cited"] = round(sum(cited_all) / max(len(cited_all), 1), 3)
    out["grounding_share"] = round(sum(share_all) / max(len(share_all), 1), 3)
    out["questions"] = len(cited_all)
    out.update(common(all_rows))
    return out


async def run_dialogues(
    kb: KB, show: bool, domains: tuple[str, ...] = ("va", "dmv"), turns: int = 4,
) -> dict[str, Any]:
    """doc2dial dialogues (``dialogues.jsonl``): the user's turns asked in order, each with the conversation so far
    (the user's earlier turns and this product's answers). Scored on the turns after the first whose agent reply rests
    on a passage (the first turns are the ``doc2dial`` set): the dialogue's page cited (any section file of it), and
    the share of the grounding passage's words in the answer. ``turns``: the user turns asked per dialogue."""
    out: dict[str, Any] = {"set": "doc2dial dialogues"}
    all_rows: list[Asked] = []
    cited_all: list[bool] = []
    share_all: list[float] = []
    for dom in domains:
        d = ingest_domain(kb, dom)
        page_of = {k: v.split("/", 1)[1].split("__")[0] for k, v in kb.filenames.items() if v.startswith(dom + "/")}
        cited, shares = [], []
        for line in (d / "dialogues.jsonl").read_text().splitlines():
            dial = json.loads(line)
            page = Path(dial["doc_file"]).name.split("__")[0]
            history: list[dict[str, Any]] = []
            asked = 0
            for i, t in enumerate(dial["turns"]):
                if t["role"] != "user" or asked >= turns:
                    continue
                asked += 1
                r = await kb.ask(dom, t["utterance"], history)
                history += [{"role": "user", "content": t["utterance"]}, assistant_turn(r)]
                reply = next((x for x in dial["turns"][i + 1:] if x["role"] == "agent"), None)
                if asked == 1 or not reply or not reply.get("grounding_text"):
                    continue
                all_rows.append(r)
                ok = any(page_of.get(doc) == page for doc in r.cited_documents())
                share = grounding_share(reply["grounding_text"], r.answer)
                cited.append(ok)
                shares.append(share)
                if show or not ok:
                    print(f"{'OK ' if ok else 'BAD'} {dom} {page} turn {asked} {t['utterance'][:80]!r} "
                          f"share={share:.2f}\n    {r.answer[:200]!r}", flush=True)
        out[f"{dom}_page_cited"] = round(sum(cited) / max(len(cited), 1), 3)
        out[f"{dom}_grounding_share"] = round(sum(shares) / max(len(shares), 1), 3)
        cited_all += cited
        share_all += shares
    out["page_cited"] = round(sum(cited_all) / max(len(cited_all), 1), 3)
    out["grounding_share"] = round(sum(share_all) / max(len(share_all), 1), 3)
    out["turns"] = len(cited_all)
    out.update(common(all_rows))
    return out


# --- SQuAD v2 dev-half --------------------------------------------------------------------------------------------
class MemoryKB(KB):
    """SQuAD v2 paragraphs in the in-memory BM25 + MiniLM retriever (each paragraph one document), answered by the real
    answer pipeline: ingesting 536 one-paragraph documents through the parser children would only measure parsing."""

    def __init__(self, data_dir: Path, backend: str) -> None:
        from app.generation.backends import ExtractiveBackend, build_llm
        from app.generation.pipeline import AnswerPipeline
        from core.settings import GenerationSettings
        from core.types import ChunkRecord
        from evaluation.squad import MemoryHybridRetriever, MiniLMEmbedder, cached_vectors

        d = eval_dir() / "squad_v2.0_dev_devhalf"
        chunks = []
        for line in (d / "corpus.jsonl").open():
            row = json.loads(line)
            chunks.append(ChunkRecord(id=row["_id"], tenant_id="squad2", document_id=row["_id"], document_version=1,
                                      title=row["title"], text=row["text"], section_path=(row["title"],)))
        embedder = MiniLMEmbedder()
        data_dir.mkdir(parents=True, exist_ok=True)
        retriever = MemoryHybridRetriever(chunks, embedder, cached_vectors(embedder, chunks, data_dir / "vectors.npz"))
        self.settings = Settings(_env_file=None, data_dir=data_dir, generation=generation(backend))
        gen = GenerationSettings(**generation(backend))
        fallback = ExtractiveBackend(embedder)
        llm = fallback if backend == "extractive" else build_llm(gen, embedder=embedder)

        class _Container:
            answers = AnswerPipeline(retriever, llm, fallback, embedder, gen, {}, rewrite_with_llm=False)

        self.container = _Container()
        self.filenames = {}


async def run_squad2(kb: KB, show: bool, n: int, seed: int = 7) -> dict[str, Any]:
    d = eval_dir() / "squad_v2.0_dev_devhalf"
    texts = {json.loads(x)["_id"]: json.loads(x)["text"] for x in (d / "queries.jsonl").open()}
    answers = [json.loads(x) for x in (d / "answers.jsonl").open()]
    rng = random.Random(seed)
    pos = rng.sample([a for a in answers if not a["is_impossible"]], n)
    neg = rng.sample([a for a in answers if a["is_impossible"]], n)
    rows: list[Asked] = []
    contains = refused_pos = partial_pos = 0
    caught = 0
    for a in pos:
        r = await kb.ask("squad2", texts[a["_id"]])
        rows.append(r)
        ok = any(norm(g) in norm(r.answer) for g in a["answers"])
        contains += ok
        refused_pos += r.outcome == "not_found"
        partial_pos += r.outcome == "partial"
        if show:
            print(f"POS {'OK ' if ok else 'BAD'} {r.outcome} {texts[a['_id']]!r} gold={a['answers'][:2]} "
                  f"missing={r.done.missing}\n    {r.answer[:300]!r}", flush=True)
    for a in neg:
        r = await kb.ask("squad2", texts[a["_id"]])
        rows.append(r)
        ok = r.outcome in ("not_found", "partial")
        caught += ok
        if show:
            print(f"NEG {'OK ' if ok else 'BAD'} {r.outcome} {texts[a['_id']]!r} missing={r.done.missing}\n    "
                  f"{r.answer[:200]!r}", flush=True)
    return {
        "set": "squad2 dev-half", "answerable": n, "unanswerable": n,
        "answerable_contains_gold": round(contains / n, 3),
        "false_refusals": round(refused_pos / n, 3),
        "answerable_partial": round(partial_pos / n, 3),
        "unanswerable_not_found_or_partial": round(caught / n, 3),
        **common(rows),
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="demo,doc2dial,squad2")
    ap.add_argument("--backend", default="extractive",
                    help="comma list of extractive | local | vllm (settings as configured)")
    ap.add_argument("--limit", type=int, default=None, help="demo / doc2dial: an even spread of this many questions")
    ap.add_argument("--ids", default="", help="demo: only these question ids (comma list, e.g. s003,s014)")
    ap.add_argument("--server-url", default=None,
                    help="vllm: the OpenAI-compatible server (default KBQA_TEST_VLLM_URL)")
    ap.add_argument("--data-dir", type=Path, default=None, help="keep ingested indexes here between runs")
    ap.add_argument("--n", type=int, default=200, help="squad2: answerable and unanswerable questions each")
    ap.add_argument("--sentence-weight", type=float, default=0.0,
                    help="ingest with sentence vectors and score the dense list by them with this weight (1 is the "
                    "measured setting; use a fresh --data-dir, documents ingested without them keep none)")
    ap.add_argument("--show", action="store_true", help="print every answer (failures are always printed)")
    ap.add_argument("--context-window", type=int, default=None,
                    help="generative backends: the model's context (the prompt budget follows); smaller is faster")
    args = ap.parse_args()
    global SERVER_URL, CONTEXT_WINDOW, SENTENCE_WEIGHT
    SENTENCE_WEIGHT = args.sentence_weight
    SERVER_URL = args.server_url or SERVER_URL
    CONTEXT_WINDOW = args.context_window
    base = args.data_dir or Path(tempfile.mkdtemp(prefix="kbqa-answers-"))
    for backend in args.backend.split(","):
        if backend == "vllm" and not SERVER_URL:
            print("# vllm: skipped (no --server-url and no KBQA_TEST_VLLM_URL)", flush=True)
            continue
        for name in args.sets.split(","):
            folder = base / ("doc2dial" if name == "dialogues" else name)  # the dialogues use the doc2dial KB
            kb = MemoryKB(folder, backend) if name == "squad2" else KB(folder, backend)
            kb.filenames = kb.filenames or _load_names(folder)
            if name == "demo":
                res = await run_demo(kb, args.show, args.limit, set(filter(None, args.ids.split(","))))
            elif name == "doc2dial":
                res = await run_doc2dial(kb, args.show, limit=args.limit)
            elif name == "dialogues":
                res = await run_dialogues(kb, args.show)
            elif name == "squad2":
                res = await run_squad2(kb, args.show, args.n)
            else:
                raise SystemExit(f"unknown set {name!r}")
            _save_names(folder, kb.filenames)
            res["backend"] = backend
            print(json.dumps(res), flush=True)
            kb.close()
    print(f"# load average {os.getloadavg()}, cpu count {os.cpu_count()}")


def _load_names(d: Path) -> dict[str, str]:
    p = d / "filenames.json"
    return json.loads(p.read_text()) if p.exists() else {}


def _save_names(d: Path, names: dict[str, str]) -> None:
    (d / "filenames.json").write_text(json.dumps(names))


if __name__ == "__main__":
    asyncio.run(main())
