"""Entry point of the isolated parser process: ``python -m ingestion.parsing.child TARGET PATH NAME OUT MEMORY_MB``.

Dies with its parent (a worker killed mid-parse leaves no parser behind), sets the address-space limit, runs
``TARGET`` (``module:function`` taking ``(path, filename)``), and pickles
``("ok", ParsedDocument)`` or ``("error", reason)`` to ``OUT``. Reasons are single lines for people, never tracebacks.
"""

from __future__ import annotations

import importlib
import pickle
import resource
import sys
from pathlib import Path
from typing import Any

#: The parent's pid: the child checks it is still there after asking to die with it (it may have died before).
PARENT_PID_ENV = "KBQA_PARSE_PARENT_PID"


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``); elsewhere, nothing."""
    import os

    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    parent = os.environ.get(PARENT_PID_ENV)
    if parent and parent.isdigit() and os.getppid() != int(parent):
        os._exit(4)  # the parent died before the request took effect


def _limit_memory(memory_mb: int) -> None:
    limit = memory_mb * 1024 * 1024
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _reason(exc: BaseException, memory_mb: int) -> str:
    from core.errors import AppError

    if isinstance(exc, AppError):
        return exc.message
    if isinstance(exc, MemoryError):
        return f"parser ran out of memory (limit {memory_mb} MB)"
    if isinstance(exc, RecursionError):
        return "document is nested too deeply to parse"
    detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
    return f"parser error ({type(exc).__name__}{': ' + detail if detail else ''})"


def main(argv: list[str]) -> int:
    target, path, name, out, memory_mb = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    _die_with_parent()
    _limit_memory(memory_mb)
    result: tuple[str, Any]
    try:
        module, _, func = target.partition(":")
        parser = getattr(importlib.import_module(module), func)
        from ingestion.parsing import progress

        progress.heartbeat()  # started: from here the parse timeout counts
        result = ("ok", parser(Path(path), name or None))
    except BaseException as exc:  # noqa: BLE001 - everything becomes a reason; the parent owns the error type
        result = ("error", _reason(exc, memory_mb))
    try:
        with open(out, "wb") as fh:
            pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
    except MemoryError:
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
