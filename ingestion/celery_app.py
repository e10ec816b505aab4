"""The Celery application for distributed ingestion (Redis broker)."""

from __future__ import annotations

from celery import Celery

from core.settings import Settings


def make_celery(settings: Settings) -> Celery:
    cfg = settings.ingestion
    app = Celery("kbqa", broker=cfg.broker_url, include=["ingestion.tasks"])
    app.conf.update(
        task_acks_late=True,  # a task is acknowledged only after it ran: a dead worker's task is redelivered
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # one job at a time per worker process
        task_time_limit=int(cfg.parse_max_s + 900),  # a parse may run parse_max_s; then chunking and embedding
        task_soft_time_limit=int(cfg.parse_max_s + 840),
        task_default_queue="ingest",
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=3,
        broker_transport_options={"visibility_timeout": int(cfg.lease_s) + 60, "socket_connect_timeout": 3},
        worker_hijack_root_logger=False,
        worker_max_tasks_per_child=200,
        # A pool process loads the ingest runtime (models) before it reports up: ~25 s on 2 busy cores. Celery's
        # default 4 s killed every replacement of a recycled process, and the worker stopped taking jobs.
        worker_proc_alive_timeout=300.0,
    )
    return app
