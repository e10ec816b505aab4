"""Celery mode's per-tenant queues: a stable tenant -> queue map, every queue consumed, the job routed by its tenant."""

from __future__ import annotations

from core.settings import Settings
from ingestion.celery_app import LEGACY_QUEUE, ingest_queue, ingest_queues
from ingestion.executors import CeleryDispatcher


def test_a_tenant_always_maps_to_the_same_queue_among_those_workers_consume():
    queues = ingest_queues(8)
    assert queues[-1] == LEGACY_QUEUE and len(queues) == 9  # round 1's queue is still drained
    tenants = [f"tenant-{i}" for i in range(200)]
    picked = [ingest_queue(t, 8) for t in tenants]
    assert set(picked) == set(queues[:-1])  # every queue is used, and no other
    assert ingest_queue("acme", 8) == "ingest.6"  # crc32, not hash(): the same in every process and release
    assert {ingest_queue(t, 1) for t in tenants} == {"ingest.0"}


def test_the_dispatcher_routes_a_job_by_its_tenant():
    settings = Settings(_env_file=None, ingestion={"executor": "celery", "tenant_queues": 8})
    tenants = {"j1": "acme", "j2": "globex"}
    dispatcher = CeleryDispatcher(settings, tenant_of=tenants.__getitem__)
    assert dispatcher.queue_for("j1") == ingest_queue("acme", 8) != dispatcher.queue_for("j2")
    assert CeleryDispatcher(settings).queue_for("j1") == ingest_queue("", 8)
