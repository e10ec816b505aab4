"""The parser child process may crash, hang or blow its memory: the caller gets PARSE_FAILED, never a dead worker.

The fake parsers below are loaded *by the child process* through ``run_isolated``'s target argument.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from core.errors import AppError, ErrorCode
from ingestion.parsing import parse_file, progress
from ingestion.parsing.isolation import POOL, ParseOptions, run_isolated
from ingestion.parsing.model import ParsedDocument

pytestmark = pytest.mark.unit
HERE = "tests.unit.test_parsing_isolation"


def fake_segfault_parser(path: Path, filename: str | None) -> ParsedDocument:
    os.kill(os.getpid(), signal.SIGSEGV)
    raise AssertionError("unreachable")


def fake_hanging_parser(path: Path, filename: str | None) -> ParsedDocument:
    while True:
        time.sleep(0.05)


def fake_greedy_parser(path: Path, filename: str | None) -> ParsedDocument:
    hoard = [bytearray(64 * 1024 * 1024) for _ in range(64)]  # 4 GiB, over the 512 MB limit below
    raise AssertionError(f"allocated {len(hoard)} blocks")


def fake_slow_steady_parser(path: Path, filename: str | None) -> ParsedDocument:
    """Ten pages of 0.5 s each: 5 s in all, longer than the 2 s timeout, but never 2 s without progress."""
    for page in range(1, 11):
        time.sleep(0.5)
        progress.report(page, 10)
    return ParsedDocument(title="t", mime_type="text/plain", doc_type="txt")


def fake_parser_waiting_on_a_helper(path: Path, filename: str | None) -> ParsedDocument:
    """A helper process (think LibreOffice) that takes 3 s, waited on with heartbeats under its own 10 s timeout."""
    import subprocess
    import sys

    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    progress.communicate(helper, 10)
    return ParsedDocument(title="converted", mime_type="text/plain", doc_type="txt")


def fake_stalling_parser(path: Path, filename: str | None) -> ParsedDocument:
    for page in range(1, 4):
        progress.report(page, 10)
    while True:
        time.sleep(0.05)


def fake_buggy_parser(path: Path, filename: str | None) -> ParsedDocument:
    raise KeyError("word/document.xml")


def fake_reporting_parser(path: Path, filename: str | None) -> ParsedDocument:
    """Says which process parsed, and what the job's environment held."""
    seen = {"pid": os.getpid(), "pages": os.environ.get(progress.PAGES_ENV, ""), "cwd": os.getcwd()}
    return ParsedDocument(title=json.dumps(seen), mime_type="text/plain", doc_type="txt")


def _failure(
    target: str, tmp_path: Path, timeout_s: float = 60, memory_mb: int = 512, options: ParseOptions | None = None
) -> str:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    with pytest.raises(AppError) as err:
        run_isolated(
            f"{HERE}:{target}", path, filename="input.bin", timeout_s=timeout_s, memory_mb=memory_mb, options=options
        )
    assert err.value.code == ErrorCode.PARSE_FAILED
    assert "Traceback" not in err.value.message
    return err.value.message


def test_segfault_in_parser_becomes_parse_failed(tmp_path: Path) -> None:
    assert _failure("fake_segfault_parser", tmp_path) == "parser crashed (segmentation fault)"


def test_hanging_parser_is_killed_after_timeout(tmp_path: Path) -> None:
    assert _failure("fake_hanging_parser", tmp_path, timeout_s=3) == "parser timed out after 3 s"


def test_memory_limit_is_enforced(tmp_path: Path) -> None:
    assert _failure("fake_greedy_parser", tmp_path) == "parser ran out of memory (limit 512 MB)"


def test_unexpected_exception_is_a_one_line_reason(tmp_path: Path) -> None:
    assert _failure("fake_buggy_parser", tmp_path) == "parser error (KeyError: 'word/document.xml')"


def test_worker_survives_and_parses_after_a_crash(tmp_path: Path) -> None:
    _failure("fake_segfault_parser", tmp_path)
    good = tmp_path / "ok.md"
    good.write_text("# Title\n\nStill alive.\n")
    doc = parse_file(good, timeout_s=60)
    assert [e.text for e in doc.elements] == ["Title", "Still alive."]


def test_timeout_counts_from_the_last_progress_so_long_documents_finish(tmp_path: Path) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    seen: list[tuple[int, int]] = []
    started = time.monotonic()
    doc = run_isolated(
        f"{HERE}:fake_slow_steady_parser",
        path,
        filename=None,
        timeout_s=2,
        memory_mb=512,
        on_progress=lambda done, total: seen.append((done, total)),
    )
    assert doc.title == "t"
    assert time.monotonic() - started > 4.5  # it really ran past the 2 s timeout
    assert seen[-1] == (10, 10) and len(seen) >= 5 and seen == sorted(seen)


def test_a_stalled_parser_is_killed_and_says_where(tmp_path: Path) -> None:
    assert _failure("fake_stalling_parser", tmp_path, timeout_s=2) == (
        "parser timed out after 2 s without progress at page 3 of 10"
    )


def test_the_whole_parse_is_bounded_too(tmp_path: Path) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    with pytest.raises(AppError) as err:
        run_isolated(
            f"{HERE}:fake_slow_steady_parser",
            path,
            filename=None,
            timeout_s=2,
            memory_mb=512,
            options=ParseOptions(max_total_s=2.5),
        )
    assert err.value.message.startswith("parser timed out after 2.5 s in all at page ")


def test_a_helper_with_its_own_timeout_keeps_the_parser_alive(tmp_path: Path) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    doc = run_isolated(f"{HERE}:fake_parser_waiting_on_a_helper", path, filename=None, timeout_s=1.5, memory_mb=512)
    assert doc.title == "converted"


WARM = ParseOptions(warm_spares=1)


@pytest.fixture
def pool() -> Any:
    """An empty warm pool (other tests' threads may have left processes in it), emptied again afterwards."""
    POOL.close()
    yield POOL
    POOL.close()


def _seen(doc: ParsedDocument) -> dict[str, Any]:
    return json.loads(doc.title)


def _report(tmp_path: Path, options: ParseOptions = WARM) -> dict[str, Any]:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    return _seen(
        run_isolated(f"{HERE}:fake_reporting_parser", path, filename=None, timeout_s=30, memory_mb=512, options=options)
    )


@pytest.mark.parametrize(
    ("target", "timeout_s", "reason"),
    [
        ("fake_segfault_parser", 60, "parser crashed (segmentation fault)"),
        ("fake_hanging_parser", 3, "parser timed out after 3 s"),
        ("fake_greedy_parser", 60, "parser ran out of memory (limit 512 MB)"),
        ("fake_buggy_parser", 60, "parser error (KeyError: 'word/document.xml')"),
    ],
)
def test_a_warm_process_fails_exactly_like_a_fresh_child_and_is_not_used_again(
    pool: Any, tmp_path: Path, target: str, timeout_s: float, reason: str
) -> None:
    warm = _report(tmp_path)["pid"]
    assert POOL.idle_pids() == [warm]  # the failing job below runs in this warm process
    assert _failure(target, tmp_path, timeout_s=timeout_s, options=WARM) == reason
    assert warm not in POOL.idle_pids()
    assert _report(tmp_path)["pid"] != warm  # the next parse gets a new process


def test_a_warm_process_takes_the_next_job_with_that_jobs_environment(pool: Any, tmp_path: Path) -> None:
    first = _report(tmp_path, ParseOptions(warm_spares=1, pages=(51, 100)))
    assert first["pages"] == "51-100"
    second = _report(tmp_path)
    assert second["pid"] == first["pid"]  # the same process, already warm
    assert second["pages"] == ""  # the previous job's part does not leak into this one
    assert second["cwd"] != first["cwd"] and not Path(first["cwd"]).exists()  # each job's folder goes with it
    assert _report(tmp_path, ParseOptions())["pid"] != first["pid"]  # warm_spares=0: a fresh process


def test_a_warm_process_is_replaced_after_max_jobs(pool: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ingestion.parsing import isolation

    monkeypatch.setattr(isolation, "MAX_JOBS", 2)
    pids = [_report(tmp_path)["pid"] for _ in range(3)]
    assert pids[0] == pids[1] != pids[2]


def test_a_warm_process_that_grew_past_half_its_memory_limit_is_replaced(pool: Any, tmp_path: Path) -> None:
    path = tmp_path / "input.bin"
    path.write_bytes(b"anything")
    pids = [
        _seen(
            run_isolated(f"{HERE}:fake_reporting_parser", path, filename=None, timeout_s=30, memory_mb=mb, options=WARM)
        )["pid"]  # fmt: skip
        for mb in (2048, 300, 2048)  # a warm process's preloaded parsers take ~220 MB of address space: > 300 / 2
    ]
    assert pids[0] == pids[1] != pids[2]


def test_a_dead_idle_process_is_replaced_not_used(pool: Any, tmp_path: Path) -> None:
    dead = _report(tmp_path)["pid"]
    os.kill(dead, signal.SIGKILL)
    time.sleep(0.2)
    path = tmp_path / "ok.md"
    path.write_text("# Title\n\nStill parsed.\n")
    doc = parse_file(path, timeout_s=60, options=WARM)
    assert [e.text for e in doc.elements] == ["Title", "Still parsed."]
    assert dead not in POOL.idle_pids()


def test_a_finished_threads_process_does_not_hold_a_place(pool: Any, tmp_path: Path) -> None:
    import threading

    seen: list[dict[str, Any]] = []
    worker = threading.Thread(target=lambda: seen.append(_report(tmp_path)))
    worker.start()
    worker.join()
    time.sleep(0.2)  # Linux ends a process with the thread that started it
    mine = _report(tmp_path)  # one place (warm_spares=1): the ended thread's process must not keep it
    assert seen and seen[0]["pid"] != mine["pid"]
    assert POOL.idle_pids() == [mine["pid"]]
