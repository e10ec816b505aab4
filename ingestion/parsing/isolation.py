"""Run a parser in a child process under a wall-clock timeout and an address-space limit.

A subprocess (not ``multiprocessing``) so it also works from daemonic Celery pool workers, which may not have
multiprocessing children. The child gets its own session so a timeout kills it together with any helper it
started (pandoc, LibreOffice, Tesseract).

The timeout counts from the child's last progress report (a page parsed, a page OCR'd, or a heartbeat while a helper
such as LibreOffice works under its own timeout), so a long document is read
to its end while a hung parser is still killed ``timeout_s`` after its last sign of life; ``max_total_s`` bounds the
whole parse. Either way the document fails with the reason: no document is ever kept partly parsed in silence.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
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


def _child_env(progress_file: Path, options: ParseOptions) -> dict[str, str]:
    env = dict(os.environ)
    env[parse_progress.PROGRESS_ENV] = str(progress_file)
    env[parse_progress.MAX_PAGES_ENV] = str(options.max_pages)
    env[LANGUAGES_ENV] = options.ocr_languages
    env[CONVERT_TIMEOUT_ENV] = f"{options.convert_timeout_s:g}"
    env.pop(parse_progress.PAGES_ENV, None)
    if options.pages is not None:
        env[parse_progress.PAGES_ENV] = f"{options.pages[0]}-{options.pages[1]}"
    env[PARENT_PID_ENV] = str(os.getpid())
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(key, "1")  # thread pools reserve address space: keep them small under RLIMIT_AS
    env.setdefault("DO_NOT_TRACK", "1")
    env.setdefault("HF_HUB_OFFLINE", "1")
    return env


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
    with tempfile.TemporaryDirectory(prefix="kbqa-parse-") as tmp:
        out = Path(tmp) / "result.pickle"
        err_path = Path(tmp) / "stderr.txt"
        progress_file = Path(tmp) / "progress"
        cmd = [
            sys.executable,
            "-m",
            "ingestion.parsing.child",
            target,
            str(Path(path).resolve()),
            filename or "",
            str(out),
            str(memory_mb),
        ]
        with open(err_path, "wb") as err:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=_child_env(progress_file, options),
                cwd=tmp,
                start_new_session=True,
            )
            code = _wait(proc, progress_file, timeout_s, options.max_total_s, on_progress)
        stderr = err_path.read_text(errors="replace")[-4000:]
        if not out.exists() or code != 0:
            if stderr.strip():
                log.warning("parser child for %s failed (code %s): %s", filename or path.name, code, stderr)
            raise parse_failed(_crash_reason(code, stderr, memory_mb))
        try:
            status, payload = pickle.loads(out.read_bytes())
        except Exception:  # noqa: BLE001 - a truncated result file is a crash, not a parse
            raise parse_failed("parser crashed (incomplete result)") from None
    if status != "ok":
        raise parse_failed(str(payload) or "parser failed")
    return payload


def _wait(
    proc: subprocess.Popen[bytes],
    progress_file: Path,
    timeout_s: float,
    max_total_s: float,
    on_progress: Callable[[int, int], None] | None,
) -> int:
    """Wait for the child; kill it ``timeout_s`` after its last sign of life (``STARTUP_GRACE_S`` more before the
    first, which it gives once its imports are done) or ``max_total_s`` after its start."""
    started = last_change = time.monotonic()
    seen: tuple[int, int] | None = None
    alive: tuple[int, int, int] | None = None
    while True:
        try:
            code = proc.wait(timeout=0.25)
        except subprocess.TimeoutExpired:
            code = None
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
            _kill_group(proc)
            raise parse_failed(f"parser timed out after {max_total_s:g} s in all{where}")
        if now - last_change > timeout_s + (0 if alive else STARTUP_GRACE_S):
            _kill_group(proc)
            stalled = f" without progress{where}" if seen else ""
            raise parse_failed(f"parser timed out after {timeout_s:g} s{stalled}")
