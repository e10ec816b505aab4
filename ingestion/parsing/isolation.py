"""Run a parser in a child process under a wall-clock timeout and an address-space limit.

A subprocess (not ``multiprocessing``) so it also works from daemonic Celery pool workers, which may not have
multiprocessing children. The child gets its own session so a timeout kills it together with any helper it
started (pandoc).
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from ingestion.parsing.model import ParsedDocument, parse_failed
from ingestion.parsing.pdf import BUDGET_ENV

log = logging.getLogger(__name__)

DEFAULT_TARGET = "ingestion.parsing.dispatch:parse_in_process"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_SIGNAL_NAMES = {
    signal.SIGSEGV: "segmentation fault",
    signal.SIGBUS: "bus error",
    signal.SIGABRT: "aborted",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic error",
}


def _child_env(timeout_s: float) -> dict[str, str]:
    env = dict(os.environ)
    env[BUDGET_ENV] = f"{timeout_s * 0.6:.1f}"  # long PDFs stop reading pages before the hard timeout
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


def run_isolated(target: str, path: Path, *, filename: str | None, timeout_s: float, memory_mb: int) -> ParsedDocument:
    """Run ``target`` (``module:function(path, filename) -> ParsedDocument``) in a child; raise PARSE_FAILED on any
    failure. ``parse_file`` uses the real dispatcher; tests pass a misbehaving fake."""
    with tempfile.TemporaryDirectory(prefix="kbqa-parse-") as tmp:
        out = Path(tmp) / "result.pickle"
        err_path = Path(tmp) / "stderr.txt"
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
                env=_child_env(timeout_s),
                cwd=tmp,
                start_new_session=True,
            )
            try:
                code = proc.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                _kill_group(proc)
                raise parse_failed(f"parser timed out after {timeout_s:g} s") from None
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
    return payload  # type: ignore[no-any-return]
