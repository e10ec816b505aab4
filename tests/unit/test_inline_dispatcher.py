"""Embedded-mode ingestion lanes: fair across tenants, one worker kept for a tenant with nothing running."""

import os
import subprocess
import threading
import time

import pytest

from ingestion.executors import InlineDispatcher

pytestmark = pytest.mark.unit


def _tenant(job_id: str) -> str:
    return job_id.split("-")[0]


def test_one_worker_takes_tenants_in_turn():
    order: list[str] = []
    gate = threading.Event()

    def run(job_id: str) -> str:
        gate.wait(5)
        order.append(job_id)
        return "indexed"

    d = InlineDispatcher(run, workers=1, tenant_of=_tenant)
    for job in ("a-1", "a-2", "a-3", "b-1", "b-2"):
        d.dispatch(job)
    gate.set()
    d.wait(timeout=10)
    d.shutdown()
    # a-1 was already running when the rest queued; then the lanes alternate
    assert order == ["a-1", "b-1", "a-2", "b-2", "a-3"]


def test_another_tenants_upload_starts_while_one_tenant_has_a_backlog():
    started: dict[str, float] = {}
    release = threading.Event()

    def run(job_id: str) -> str:
        started[job_id] = time.monotonic()
        if job_id.startswith("a-"):
            release.wait(10)  # tenant a's long documents
        return "indexed"

    d = InlineDispatcher(run, workers=2, tenant_of=_tenant)
    for i in range(5):
        d.dispatch(f"a-{i}")
    time.sleep(0.2)
    assert set(started) == {"a-0"}, "one tenant's backlog must not take every worker"
    d.dispatch("b-0")
    deadline = time.monotonic() + 5
    while "b-0" not in started and time.monotonic() < deadline:
        time.sleep(0.01)
    assert "b-0" in started, "tenant b waited behind tenant a's backlog"
    assert d.pending == 5  # a-0 running, a-1..a-4 queued (b-0 finished)
    release.set()
    d.wait(timeout=10)
    assert d.pending == 0 and len(started) == 6
    d.shutdown()


def test_a_job_that_raises_does_not_stop_the_lane_and_shutdown_cancels_the_queue():
    ran: list[str] = []
    block = threading.Event()

    def run(job_id: str) -> str:
        ran.append(job_id)
        if job_id == "a-0":
            raise RuntimeError("boom")
        if job_id == "a-1":
            block.wait(5)
        return "indexed"

    d = InlineDispatcher(run, workers=1, tenant_of=_tenant)
    for i in range(4):
        d.dispatch(f"a-{i}")
    deadline = time.monotonic() + 5
    while "a-1" not in ran and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == ["a-0", "a-1"]
    d.shutdown()  # a-2, a-3 never start
    block.set()
    time.sleep(0.1)
    assert ran == ["a-0", "a-1"]


def test_an_unknown_tenant_runs_in_the_shared_lane():
    def tenant_of(job_id: str) -> str:
        raise LookupError(job_id)

    done: list[str] = []
    gate = threading.Event()

    def run(job_id: str) -> str:
        gate.wait(5)
        done.append(job_id)
        return "indexed"

    d = InlineDispatcher(run, workers=2, tenant_of=tenant_of)
    d.dispatch("x")
    d.dispatch("x")  # a job already queued or running is not queued twice
    gate.set()
    d.wait(timeout=5)
    assert done == ["x"]
    d.shutdown()


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="thread priorities are a POSIX feature")
def test_workers_run_at_a_lower_cpu_priority_and_their_child_processes_inherit_it():
    seen: dict[str, int] = {}
    base = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def run(job_id: str) -> str:
        seen[job_id] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        child = subprocess.run(["sh", "-c", "nice"], capture_output=True, text=True, check=True)
        seen[job_id + "-child"] = int(child.stdout)
        return "indexed"

    for nice in (0, 5):
        d = InlineDispatcher(run, workers=1, nice=nice)
        d.dispatch(f"n{nice}")
        d.wait(timeout=10)
        d.shutdown()
    assert seen["n0"] == base and seen["n0-child"] == base
    assert seen["n5"] == min(19, base + 5) and seen["n5-child"] == min(19, base + 5)
    # the calling thread itself is untouched
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == base
