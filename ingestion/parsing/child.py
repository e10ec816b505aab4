"""Entry point of the isolated parser process: ``python -m ingestion.parsing.child TARGET PATH NAME OUT MEMORY_MB``,
or ``python -m ingestion.parsing.child --warm`` / ``--stdin`` (the job comes on stdin).

Dies with its parent (a worker killed mid-parse leaves no parser behind), sets the address-space limit, runs
``TARGET`` (``module:function`` taking ``(path, filename)``), and pickles
``("ok", ParsedDocument)`` or ``("error", reason)`` to ``OUT``. Reasons are single lines for people, never tracebacks.

``--warm`` is a process of the warm pool (``isolation.WarmPool``): it imports the parsers and their libraries once
(about 0.8 s), then runs jobs that arrive on stdin, a JSON line each with the arguments above and the job's whole
environment, each exactly as a cold child would, and answers each with its exit code on a line. The parent gives a
process at most ``isolation.MAX_JOBS`` jobs and throws it away after any failure, timeout or crash; ``--stdin`` is
the same without the preload (a one-job child).
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


#: What a spare imports before its job arrives: the parsers and the libraries they import on first use.
PRELOAD = (
    "ingestion.parsing.dispatch",
    "ingestion.parsing.parts",
    "pikepdf",
    "pdfplumber",
    "pypdfium2",
    "docx",
    "pptx",
    "openpyxl",
    "bs4",
    "markdown_it",
    "lxml.etree",
    "PIL.Image",
)


def stdin_main(*, preload: bool) -> int:
    """Run the jobs the parent writes to stdin, one JSON line each, until it closes stdin or a job fails; after each
    job write its exit code on a line to the parent's pipe (the original stdout). A warm process preloads first.

    Parsers and their helpers get ``/dev/null`` as stdin and the stderr file as stdout: a stray read or print cannot
    eat the next job or garble the reply."""
    import contextlib
    import json
    import os

    from ingestion.parsing import progress

    _die_with_parent()
    jobs = os.fdopen(os.dup(0), "r")  # dup'd descriptors are not inherited by helpers
    replies = os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    for name in PRELOAD if preload else ():
        with contextlib.suppress(Exception):  # an optional library missing here is imported (and reported) by the job
            importlib.import_module(name)
    for line in jobs:
        if not line.strip():
            break
        job = json.loads(line)
        os.environ.clear()
        os.environ.update(job["env"])
        os.chdir(job["cwd"])
        progress._state[:] = [0, 0, 0]  # a new job's progress starts from nothing
        code = run_job(job["target"], job["path"], job["name"], job["out"], int(job["memory_mb"]))
        replies.write(f"{code}\n")
        replies.flush()
        if code != 0:
            return code
    return 0


def run_job(target: str, path: str, name: str, out: str, memory_mb: int) -> int:
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


def main(argv: list[str]) -> int:
    target, path, name, out, memory_mb = argv[0], argv[1], argv[2], argv[3], int(argv[4])
    _die_with_parent()
    return run_job(target, path, name, out, memory_mb)


if __name__ == "__main__":
    if sys.argv[1:2] in (["--warm"], ["--stdin"]):
        sys.exit(stdin_main(preload=sys.argv[1] == "--warm"))
    sys.exit(main(sys.argv[1:]))
