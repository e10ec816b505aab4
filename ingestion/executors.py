"""Dispatchers: in-process (embedded mode) and Celery (distributed mode)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from core.settings import Settings

log = logging.getLogger(__name__)


class InlineDispatcher:
    """Runs jobs in this process on one background thread, in submission order (embedded mode)."""

    def __init__(self, run: Callable[[str], str]) -> None:
        self._run = run
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kbqa-ingest")
        self._futures: dict[str, Future[str]] = {}

    def dispatch(self, job_id: str) -> None:
        self._futures[job_id] = self._pool.submit(self._safe_run, job_id)

    def _safe_run(self, job_id: str) -> str:
        try:
            return self._run(job_id)
        finally:
            self._futures.pop(job_id, None)

    def wait(self, timeout: float | None = None) -> None:
        """Block until every dispatched job has finished (CLI ingest and tests)."""
        for fut in list(self._futures.values()):
            fut.result(timeout=timeout)

    @property
    def pending(self) -> int:
        return len(self._futures)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class CeleryDispatcher:
    """Sends the job id to the ``ingest`` queue. Raises when the broker cannot be reached (the job stays in the
    outbox and the sweeper retries)."""

    def __init__(self, settings: Settings) -> None:
        from ingestion.celery_app import make_celery

        self._settings = settings
        self._app = make_celery(settings)

    def dispatch(self, job_id: str) -> None:
        from ingestion.tasks import TaskName

        self._app.send_task(
            TaskName.INGEST_DOCUMENT.value,
            args=[job_id],
            queue="ingest",
            expires=self._settings.ingestion.task_expires_s,
            retry=False,
        )
