"""Celery tasks: thin wrappers around the pipeline. Task names come from an enum."""

from __future__ import annotations

import enum
import logging
import os
from typing import Any

from celery import shared_task
from celery.signals import worker_process_init, worker_process_shutdown

from core.settings import Settings

log = logging.getLogger(__name__)


class TaskName(str, enum.Enum):
    INGEST_DOCUMENT = "kbqa.ingest_document"


_runtime: Any = None


def _get_runtime() -> Any:
    global _runtime
    if _runtime is None:
        from ingestion.runtime import build_ingest_runtime

        _runtime = build_ingest_runtime(Settings())
    return _runtime


@worker_process_init.connect
def _init_worker(**_: Any) -> None:
    from opentelemetry.instrumentation.celery import CeleryInstrumentor
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    from core.tracing import configure_tracing

    configure_tracing("kbqa-worker", Settings().otlp_endpoint)
    CeleryInstrumentor().instrument()
    SQLAlchemyInstrumentor().instrument()
    _get_runtime()


@worker_process_shutdown.connect
def _close_worker(**_: Any) -> None:
    from core.tracing import shutdown_tracing

    if _runtime is not None:
        _runtime.close()
    shutdown_tracing()  # a pool child leaves by os._exit: atexit would never export the last batch of spans


@shared_task(name=TaskName.INGEST_DOCUMENT.value, acks_late=True, reject_on_worker_lost=True)
def ingest_document(job_id: str) -> str:
    runtime = _get_runtime()
    owner = f"celery:{os.uname().nodename}:{os.getpid()}"
    status = runtime.pipeline.run(job_id, owner=owner)
    log.info("ingest job %s -> %s", job_id, status)
    return str(status)
