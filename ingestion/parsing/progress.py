"""Progress of the isolated parser, reported to its parent through a small file.

The parent (``isolation.run_isolated``) reads it to show per-page progress and to apply its timeout to the time
since the last progress rather than to the whole parse: a 600-page manual is parsed to the end as long as pages keep
coming, while a parser that hangs is still killed ``timeout_s`` after its last sign of life.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

PROGRESS_ENV = "KBQA_PARSE_PROGRESS"
_state = [0, 0, 0]  # done, total, heartbeats
#: Longest document (pages, slides, image frames) that is parsed; a longer one fails with this reason, never partly.
MAX_PAGES_ENV = "KBQA_PARSE_MAX_PAGES"
DEFAULT_MAX_PAGES = 5000
#: The pages ``FIRST-LAST`` (1-based, inclusive) a part-wise parse reads (``ingestion.parsing.parts``).
PAGES_ENV = "KBQA_PARSE_PAGES"


def max_pages() -> int:
    try:
        return max(1, int(os.environ.get(MAX_PAGES_ENV, DEFAULT_MAX_PAGES)))
    except ValueError:
        return DEFAULT_MAX_PAGES


def page_range() -> tuple[int, int] | None:
    """The pages this child reads, or None for the whole document."""
    value = os.environ.get(PAGES_ENV, "")
    first, sep, last = value.partition("-")
    if not sep:
        return None
    try:
        return max(1, int(first)), max(1, int(last))
    except ValueError:
        return None


def check_pages(total: int, unit: str = "pages") -> None:
    from ingestion.parsing.model import parse_failed

    limit = max_pages()
    if total > limit:
        raise parse_failed(
            f"document has {total} {unit}, over the limit of {limit} (KBQA_INGESTION__PARSE_MAX_PAGES); "
            "nothing was indexed rather than a part of it"
        )


def report(done: int, total: int) -> None:
    """Record that ``done`` of ``total`` units are parsed (a tiny file replaced atomically, so the parent never reads
    half of it)."""
    _state[0], _state[1] = done, total
    _write()


def heartbeat() -> None:
    """Say the parser is alive while a helper (LibreOffice, Tesseract) works under its own timeout."""
    _state[2] += 1
    _write()


def _write() -> None:
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    try:
        Path(tmp).write_text(" ".join(map(str, _state)) + "\n")
        os.replace(tmp, path)
    except OSError:
        pass  # progress is advisory


def communicate(proc: subprocess.Popen[bytes], timeout_s: float) -> tuple[bytes, bytes]:
    """``proc.communicate`` with a heartbeat every second; raises ``TimeoutExpired`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return proc.communicate(timeout=max(0.01, min(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            if time.monotonic() >= deadline:
                raise
            heartbeat()


def run(
    cmd: list[str],
    timeout_s: float,
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    merge_stderr: bool = False,
) -> tuple[int, bytes, bytes]:
    """Run a helper program (LibreOffice, Tesseract) in a process group of its own, beating the heartbeat while it
    works: ``(returncode, stdout, stderr)``. After ``timeout_s`` the whole group is killed and ``TimeoutExpired``
    raised; helpers the program left in its group are killed when it ends."""
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
    try:
        out, err = communicate(proc, timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, out, err or b""


def read(path: Path) -> tuple[int, int, int] | None:
    """``(done, total, heartbeats)`` as last written by the child, or None before its first report."""
    try:
        done, total, beats = Path(path).read_text().split()
        return int(done), int(total), int(beats)
    except (OSError, ValueError):
        return None
