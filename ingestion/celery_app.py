"""The Celery application for distributed ingestion (Redis broker), and its per-tenant queues."""

from __future__ import annotations

import zlib

from celery import Celery

from core.settings import Settings

#: The queue of round 1 (one for all tenants). Workers still drain it, so jobs sent before an upgrade are not lost.
LEGACY_QUEUE = "ingest"


def ingest_queue(tenant_id: str, queues: int) -> str:
    """The queue a tenant's jobs go to: ``ingest.<k>``, ``k`` a stable hash of the tenant (the same in every process
    and release, unlike ``hash()``), so one tenant's jobs stay first in first out among themselves."""
    return f"{LEGACY_QUEUE}.{zlib.crc32(tenant_id.encode()) % max(1, queues)}"


def ingest_queues(queues: int) -> list[str]:
    """Every queue a worker consumes: the per-tenant ones, then the legacy one."""
    return [f"{LEGACY_QUEUE}.{k}" for k in range(max(1, queues))] + [LEGACY_QUEUE]


def make_celery(settings: Settings) -> Celery:
    cfg = settings.ingestion
    app = Celery("kbqa", broker=cfg.broker_url, include=["ingestion.tasks"])
    app.conf.update(
        task_acks_late=True,  # a task is acknowledged only after it ran: a dead worker's task is redelivered
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,  # one job at a time per worker process
        task_time_limit=int(cfg.parse_max_s + 900),  # a parse may run parse_max_s; then chunking and embedding
        task_soft_time_limit=int(cfg.parse_max_s + 840),
        task_default_queue=ingest_queue("", cfg.tenant_queues),
        task_ignore_result=True,
        broker_connection_retry_on_startup=True,
        broker_connection_timeout=3,
        broker_transport_options={
            "visibility_timeout": int(cfg.lease_s) + 60,
            "socket_connect_timeout": 3,
            # Kombu's default, stated because fairness rests on it: after a message is taken from a queue, that
            # queue goes to the back of the worker's list, so busy tenants' queues are served in turn.
            "queue_order_strategy": "round_robin",
        },
        worker_hijack_root_logger=False,
        worker_max_tasks_per_child=200,
        # A pool process loads the ingest runtime (models) before it reports up: ~25 s on 2 busy cores. Celery's
        # default 4 s killed every replacement of a recycled process, and the worker stopped taking jobs.
        worker_proc_alive_timeout=300.0,
    )
    return app
