"""Run a parser in a child process under a wall-clock timeout and an address-space limit.

A subprocess (not ``multiprocessing``) so it also works from daemonic Celery pool workers, which may not have
multiprocessing children. The child gets its own session so a timeout kills it together with any helper it
started (pandoc, LibreOffice, Tesseract).

The timeout counts from the child's last progress report (a page parsed, a page OCR'd, or a heartbeat while a helper
such as LibreOffice works under its own timeout), so a long document is read
to its end while a hung parser is still killed ``timeout_s`` after its last sign of life; ``max_total_s`` bounds the
whole parse. Either way the document fails with the reason: no document is ever kept partly parsed in silence.

With ``ParseOptions.warm_spares`` the child comes from a :class:`WarmPool` of parser processes that imported the
parsers once and take one job after another (``child --warm``), so a parse skips the interpreter start and the imports
(0.2-0.8 s a file on 2 cores). Everything above still holds per job: its own memory limit, timeouts, progress and
result folder; a process that failed, timed out or crashed is never used again, and none runs more than
``MAX_JOBS`` jobs.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import pickle
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingestion.parsing import progress as parse_progress
from ingestion.parsing.child import PARENT_PID_ENV
from ingestion.parsing.convert import CONVERT_TIMEOUT_ENV
from ingestion.parsing.model import parse_failed
from ingestion.parsing.ocr import DEFAULT_LANGUAGES, LANGUAGES_ENV

log = logging.getLogger(__name__)

DEFAULT_TARGET = "ingestion.parsing.dispatch:parse_in_process"
#: Extra seconds the child has to start (interpreter and imports; slow on a loaded machine) before its first heartbeat.
STARTUP_GRACE_S = 30.0
_REPO_ROOT = Path(__file__).resolve().parents[2]
_SIGNAL_NAMES = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGABRT: "aborted",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic error",
}


@dataclass(frozen=True, slots=True)
class ParseOptions:
    """What the child needs besides the file (from ``Settings.ingestion``)."""

    #: Tesseract languages (``eng``, ``eng+deu``); empty turns OCR off.
    ocr_languages: str = DEFAULT_LANGUAGES
    #: Pages (or slides, image frames) beyond which a document fails instead of being parsed.
    max_pages: int = parse_progress.DEFAULT_MAX_PAGES
    #: Seconds one LibreOffice conversion may take.
    convert_timeout_s: float = 120.0
    #: Seconds the whole parse may take, however steadily it progresses.
    max_total_s: float = 3600.0
    #: Only these pages (first, last; 1-based, inclusive) of a PDF, for a part-wise parse (``parts``); None: all.
    pages: tuple[int, int] | None = None
    #: Spare parser processes kept warm in this process (``WarmPool``); 0 starts a fresh one per parse.
    warm_spares: int = 0


def _base_env() -> dict[str, str]:
    """The environment a child starts with (a spare's imports see it); the job's own values come with the job."""
    env = dict(os.environ)
    env[PARENT_PID_ENV] = str(os.getpid())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(key, "1")  # thread pools reserve address space: keep them small under RLIMIT_AS
    env.setdefault("DO_NOT_TRACK", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


def _child_env(progress_file: Path, options: ParseOptions) -> dict[str, str]:
    env = _base_env()
    env[parse_progress.PROGRESS_ENV] = str(progress_file)
    env[parse_progress.MAX_PAGES_ENV] = str(options.max_pages)
    env[LANGUAGES_ENV] = options.ocr_languages
    env[CONVERT_TIMEOUT_ENV] = f"{options.convert_timeout_s:g}"
    env.pop(parse_progress.PAGES_ENV, None)
    if options.pages is not None:
        env[parse_progress.PAGES_ENV] = f"{options.pages[0]}-{options.pages[1]}"
    return env


#: Jobs one warm process runs before it is replaced (bounds what a long-lived parser process can accumulate).
MAX_JOBS = 25


class _Child:
    """One parser process with its private folder, taking jobs on stdin (``child --stdin`` / ``--warm``)."""

    def __init__(self, *, warm: bool = False) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="kbqa-parse-"))
        self.stderr = self.dir / "stderr.txt"
        self.jobs = 0
        self.thread = threading.get_ident()
        with open(self.stderr, "wb") as err:
            self.proc: subprocess.Popen[bytes] = subprocess.Popen(
                [sys.executable, "-m", "ingestion.parsing.child", "--warm" if warm else "--stdin"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                env=_base_env(),
                cwd=self.dir,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, job: dict[str, Any], *, last: bool) -> None:
        """Hand the process a job (``last``: and no more, so it exits after it). A process that died meanwhile
        shows up as a crash when its reply is read."""
        assert self.proc.stdin is not None
        self.jobs += 1
        try:
            self.proc.stdin.write(json.dumps(job).encode() + b"\n")
            self.proc.stdin.flush()
            if last:
                self.proc.stdin.close()
        except (BrokenPipeError, OSError):
            pass

    def reply(self, timeout: float) -> int | None:
        """The job's exit code once the process answered or died; None while it works."""
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        if line.strip().lstrip(b"-").isdigit():
            return int(line)
        return self.proc.wait()  # no answer: it died (a signal, or an exit before the reply)

    def kill(self) -> None:
        if self.alive():
            _kill_group(self.proc)

    def discard(self) -> None:
        if self.alive():
            with contextlib.suppress(OSError):
                assert self.proc.stdin is not None
                self.proc.stdin.close()  # a process between jobs leaves on its own
            try:
                self.proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                _kill_group(self.proc)
        self.proc.wait()
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def _address_space_mb(pid: int) -> float:
    """A process's virtual memory size (what RLIMIT_AS bounds) in MB; infinite when it cannot be read."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return float("inf")


class WarmPool:
    """Parser processes kept between parses, so a parse does not wait for an interpreter and its imports.

    ``take()`` hands out the idle process that this thread started (Linux ties a child's die-with-parent signal
    to the thread that started it; the ingest workers that parse are long-lived threads, or a Celery pool process's
    main thread), else starts a warm one. ``give_back`` keeps it for the thread's next parse when it ran its job
    cleanly, has run fewer than :data:`MAX_JOBS`, and fewer than ``spares`` are idle; anything else ends it. An idle
    process holds ~85 MB RSS. A pool inherited through ``fork`` (a Celery pool process) starts empty: those
    processes are the parent's."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Child] = []
        self._pid = os.getpid()

    def take(self) -> _Child:
        me = threading.get_ident()
        with self._lock:
            self._prune()
            mine = next((c for c in self._idle if c.thread == me), None)
            if mine is not None:
                self._idle.remove(mine)
        if mine is not None and mine.alive():
            return mine
        if mine is not None:
            mine.discard()
        return _Child(warm=True)

    def give_back(self, child: _Child, *, clean: bool, spares: int, memory_mb: int) -> None:
        """Keep ``child`` for its thread's next parse (a thread parses one file at a time, so it keeps one), or end
        it (see the class); also ended once its address space has grown past half of ``memory_mb``, so the next job
        keeps most of its limit for itself."""
        roomy = _address_space_mb(child.proc.pid) < memory_mb / 2
        with self._lock:
            self._prune()
            keep = (
                clean
                and roomy
                and child.alive()
                and child.jobs < MAX_JOBS
                and len(self._idle) < spares
                and not any(c.thread == child.thread for c in self._idle)
            )
            if keep:
                self._idle.append(child)
        if not keep:
            child.discard()

    def _prune(self) -> None:
        """Forget processes of another pid (inherited through fork), and end those whose thread has ended (Linux
        already killed them with it) or that died: they must not hold the places of live threads' processes."""
        if self._pid != os.getpid():
            self._idle, self._pid = [], os.getpid()
        threads = {t.ident for t in threading.enumerate()}
        gone = [c for c in self._idle if c.thread not in threads or not c.alive()]
        for child in gone:
            self._idle.remove(child)
            child.discard()

    def idle_pids(self) -> list[int]:
        with self._lock:
            return [c.proc.pid for c in self._idle if c.alive()]

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        if self._pid == os.getpid():
            for child in idle:
                child.discard()


#: This process's warm parser processes (``ParseOptions.warm_spares`` > 0).
POOL = WarmPool()
atexit.register(POOL.close)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _crash_reason(code: int, stderr: str, memory_mb: int) -> str:
    if "MemoryError" in stderr or "std::bad_alloc" in stderr or "out of memory" in stderr.lower():
        return f"parser ran out of memory (limit {memory_mb} MB)"
    if code < 0:
        sig = signal.Signals(-code)
        if sig == signal.SIGKILL:
            return f"parser was killed (probably out of memory; limit {memory_mb} MB)"
        return f"parser crashed ({_SIGNAL_NAMES.get(sig, sig.name)})"
    return f"parser crashed (exit code {code})"


def run_isolated(
    target: str,
    path: Path,
    *,
    filename: str | None,
    timeout_s: float,
    memory_mb: int,
    options: ParseOptions | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Any:
    """Run ``target`` (``module:function(path, filename) -> ParsedDocument``, or a ``PdfPart``) in a child; raise
    PARSE_FAILED on any failure. ``timeout_s`` counts from the child's last progress report; ``on_progress(done,
    total)`` sees each one.
    ``parse_file`` uses the real dispatcher; tests pass a misbehaving fake."""
    options = options or ParseOptions()
    warm = options.warm_spares > 0
    child = POOL.take() if warm else _Child()
    clean = False
    job = Path(tempfile.mkdtemp(prefix="job-", dir=child.dir))
    try:
        out = job / "result.pickle"
        stderr_from = child.stderr.stat().st_size
        child.send(
            {
                "target": target,
                "path": str(Path(path).resolve()),
                "name": filename or "",
                "out": str(out),
                "memory_mb": memory_mb,
                "env": _child_env(job / "progress", options),
                "cwd": str(job),
            },
            last=not warm or child.jobs + 1 >= MAX_JOBS,
        )
        code = _wait(child, job / "progress", timeout_s, options.max_total_s, on_progress)
        with open(child.stderr, "rb") as fh:
            fh.seek(stderr_from)
            stderr = fh.read().decode(errors="replace")[-4000:]
        if not out.exists() or code != 0:
            if stderr.strip():
                log.warning("parser child for %s failed (code %s): %s", filename or path.name, code, stderr)
            raise parse_failed(_crash_reason(code, stderr, memory_mb))
        try:
            status, payload = pickle.loads(out.read_bytes())
        except Exception:  # noqa: BLE001 - a truncated result file is a crash, not a parse
            raise parse_failed("parser crashed (incomplete result)") from None
        clean = status == "ok"
    finally:
        shutil.rmtree(job, ignore_errors=True)
        if warm:
            POOL.give_back(child, clean=clean, spares=options.warm_spares, memory_mb=memory_mb)
        else:
            child.discard()
    if status != "ok":
        raise parse_failed(str(payload) or "parser failed")
    return payload


def _wait(
    child: _Child,
    progress_file: Path,
    timeout_s: float,
    max_total_s: float,
    on_progress: Callable[[int, int], None] | None,
) -> int:
    """Wait for the child's reply; kill it ``timeout_s`` after its last sign of life (``STARTUP_GRACE_S`` more before
    the first, which it gives once its imports are done) or ``max_total_s`` after its start."""
    started = last_change = time.monotonic()
    seen: tuple[int, int] | None = None
    alive: tuple[int, int, int] | None = None
    while True:
        code = child.reply(timeout=0.25)
        now = time.monotonic()
        current = parse_progress.read(progress_file)
        if current is not None and current != alive:
            alive, last_change = current, now  # a page done or a helper's heartbeat
            if current[:2] != seen and current[1] > 0:
                seen = current[:2]
                if on_progress is not None:
                    try:
                        on_progress(*seen)
                    except Exception:  # noqa: BLE001 - a progress sink must not fail the parse
                        log.debug("progress callback failed", exc_info=True)
        if code is not None:
            return code
        where = f" at page {seen[0]} of {seen[1]}" if seen else ""
        if now - started > max_total_s:
            child.kill()
            raise parse_failed(f"parser timed out after {max_total_s:g} s in all{where}")
        if now - last_change > timeout_s + (0 if alive else STARTUP_GRACE_S):
            child.kill()
            stalled = f" without progress{where}" if seen else ""
            raise parse_failed(f"parser timed out after {timeout_s:g} s{stalled}")
