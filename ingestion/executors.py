"""Dispatchers: in-process (embedded mode) and Celery (distributed mode)."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future

from core.settings import Settings

log = logging.getLogger(__name__)


def lower_priority(by: int) -> None:
    """Add ``by`` to the calling thread's nice value (capped at 19); best effort, a no-op where unsupported."""
    if by <= 0 or not hasattr(os, "setpriority"):
        return
    tid = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))
    except OSError:
        log.warning("could not lower the ingest worker's CPU priority", exc_info=True)


class InlineDispatcher:
    """Runs jobs in this process (embedded mode) on ``workers`` background threads, fairly across tenants.

    Each tenant has its own first-in-first-out lane; free workers take the next job from the lanes in turn
    (round robin) and never run two jobs of one tenant at once while another tenant waits. So one tenant's backlog
    or one long document delays other tenants by at most the jobs already running, not by the whole backlog.
    ``tenant_of(job_id)`` names a job's lane (all jobs share one lane without it).

    ``nice`` lowers the workers' CPU priority by that much (Linux schedules threads, so this is per worker thread;
    the parser processes and the embedding threads a worker starts inherit it): in embedded mode the same cores
    answer queries, and the scheduler then gives a query's threads the core first while ingestion keeps the rest."""

    def __init__(
        self,
        run: Callable[[str], str],
        *,
        workers: int = 1,
        tenant_of: Callable[[str], str] | None = None,
        nice: int = 0,
    ) -> None:
        self._run = run
        self._nice = nice
        self._tenant_of = tenant_of
        self._lanes: dict[str, deque[str]] = {}
        self._turns: deque[str] = deque()  # tenants with queued jobs, in round-robin order
        self._running: dict[str, int] = {}  # tenant -> jobs running now
        self._futures: dict[str, Future[str]] = {}
        self._cv = threading.Condition()
        self._closed = False
        self._threads = [
            threading.Thread(target=self._work, name=f"kbqa-ingest-{i}", daemon=True) for i in range(max(1, workers))
        ]
        for t in self._threads:
            t.start()

    def dispatch(self, job_id: str) -> None:
        tenant = self._lane(job_id)
        with self._cv:
            if self._closed or job_id in self._futures:
                return
            self._futures[job_id] = Future()
            lane = self._lanes.setdefault(tenant, deque())
            lane.append(job_id)
            if tenant not in self._turns:
                self._turns.append(tenant)
            self._cv.notify()

    def _lane(self, job_id: str) -> str:
        if self._tenant_of is None:
            return ""
        try:
            return self._tenant_of(job_id)
        except Exception:  # noqa: BLE001 - an unknown job still runs (and fails or no-ops in the pipeline)
            log.warning("no tenant for job %s; it runs in the shared lane", job_id, exc_info=True)
            return ""

    def _next(self) -> tuple[str, str] | None:
        """The next (tenant, job): the first tenant in turn with nothing running, else the first in turn."""
        if not self._turns:
            return None
        idle = [t for t in self._turns if not self._running.get(t)]
        if idle:
            tenant = idle[0]
        elif len(self._threads) > 1 and sum(self._running.values()) >= len(self._threads) - 1:
            return None  # every waiting tenant has a job running: keep one worker free for another tenant's upload
        else:
            tenant = self._turns[0]
        self._turns.remove(tenant)
        lane = self._lanes[tenant]
        job_id = lane.popleft()
        if lane:
            self._turns.append(tenant)  # back of the line
        else:
            del self._lanes[tenant]
        self._running[tenant] = self._running.get(tenant, 0) + 1
        return tenant, job_id

    def _work(self) -> None:
        lower_priority(self._nice)
        while True:
            with self._cv:
                picked = self._next()
                while picked is None:
                    if self._closed:
                        return
                    self._cv.wait()
                    picked = self._next()
                tenant, job_id = picked
                fut = self._futures[job_id]
            try:
                if fut.set_running_or_notify_cancel():
                    try:
                        fut.set_result(self._run(job_id))
                    except BaseException as exc:  # noqa: BLE001 - the pipeline records failures itself
                        log.exception("ingest job %s raised", job_id)
                        fut.set_exception(exc)
            finally:
                with self._cv:
                    self._running[tenant] -= 1
                    self._futures.pop(job_id, None)
                    self._cv.notify_all()

    def wait(self, timeout: float | None = None) -> None:
        """Block until every dispatched job has finished (CLI ingest and tests)."""
        while True:
            with self._cv:
                futures = list(self._futures.values())
            if not futures:
                return
            for fut in futures:
                fut.result(timeout=timeout)

    @property
    def pending(self) -> int:
        with self._cv:
            return len(self._futures)

    def shutdown(self) -> None:
        with self._cv:
            self._closed = True
            for lane in self._lanes.values():
                for job_id in lane:
                    fut = self._futures.pop(job_id, None)
                    if fut is not None:
                        fut.cancel()
            self._lanes.clear()
            self._turns.clear()
            self._cv.notify_all()


class CeleryDispatcher:
    """Sends the job id to its tenant's queue (:func:`ingestion.celery_app.ingest_queue`; ``tenant_of(job_id)`` names
    the tenant, all jobs go to one queue without it). Raises when the broker cannot be reached (the job stays in the
    outbox and the sweeper retries)."""

    def __init__(self, settings: Settings, *, tenant_of: Callable[[str], str] | None = None) -> None:
        from ingestion.celery_app import make_celery

        self._settings = settings
        self._tenant_of = tenant_of
        self._app = make_celery(settings)

    def queue_for(self, job_id: str) -> str:
        from ingestion.celery_app import ingest_queue

        return ingest_queue(self._tenant_of(job_id) if self._tenant_of else "", self._settings.ingestion.tenant_queues)

    def dispatch(self, job_id: str) -> None:
        from ingestion.tasks import TaskName

        self._app.send_task(
            TaskName.INGEST_DOCUMENT.value,
            args=[job_id],
            queue=self.queue_for(job_id),
            expires=self._settings.ingestion.task_expires_s,
            retry=False,
        )
