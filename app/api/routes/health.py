"""Liveness, readiness and metrics."""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import get_container
from app.services.ingestion import jobs_by_status
from core.errors import AppError, ErrorCode

router = APIRouter(tags=["health"])

#: How long /readyz waits for the index and file store checks together. A server that went away after the client
#: connected can hold a call for a minute (the Weaviate client retries refused gRPC calls with backoff): past this
#: the check counts as down, so the answer is "degraded" in seconds instead of a probe timeout.
CHECK_TIMEOUT_S = 3.0
# Shared, with at most one check in flight per name: a check stuck in its client's retries holds one thread, and
# later probes report that name down at once instead of queueing behind it.
_CHECKS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kbqa-readyz")
_IN_FLIGHT: dict[tuple[int, str], Future[object]] = {}
_IN_FLIGHT_LOCK = threading.Lock()


def _bounded(checks: dict[str, Callable[[], object]], timeout_s: float, *, scope: int) -> dict[str, bool]:
    """Run ``checks`` concurrently; True for each that returned within ``timeout_s`` (overall) without raising.
    ``scope`` (the container's id) keeps the in-flight bookkeeping of several applications in one process apart."""
    futures: dict[str, Future[object] | None] = {}
    with _IN_FLIGHT_LOCK:
        for name, fn in checks.items():
            running = _IN_FLIGHT.get((scope, name))
            if running is not None and not running.done():
                futures[name] = None  # the previous probe of this name is still stuck: down
            else:
                futures[name] = _IN_FLIGHT[(scope, name)] = _CHECKS.submit(fn)
    deadline = time.monotonic() + timeout_s
    out: dict[str, bool] = {}
    for name, fut in futures.items():
        if fut is None:
            out[name] = False
            continue
        try:
            fut.result(timeout=max(0.0, deadline - time.monotonic()))
            out[name] = True
        except FutureTimeout:
            out[name] = False
        except Exception:  # noqa: BLE001 - any failure means "not usable"
            out[name] = False
    return out


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Ready: database usable, models loaded, at least one index usable")
def readyz(request: Request) -> JSONResponse:
    """200 ``ready``, or 200 ``degraded`` while some index or the file store is down (the others still answer, so the
    replica stays in the load balancer), or 503 ``not_ready`` without the database, the models, or any index."""
    container = get_container(request)
    checks: dict[str, Any] = {"database": container.db.ping()}
    probes: dict[str, Callable[[], object]] = {
        name: getattr(container.indexes, name).count for name in ("keyword", "vector", "graph")
    }
    # Uploads and ingestion need the file store; answering does not: without it the replica is degraded, not down.
    files = getattr(getattr(container, "ingest", None), "files", None)
    if files is not None:

        def file_store_ok() -> None:
            if not files.ping():
                raise ConnectionError("file store unreachable")

        probes["file_store"] = file_store_ok
    results = _bounded(probes, CHECK_TIMEOUT_S, scope=id(container))
    indexes = {name: results[name] for name in ("keyword", "vector", "graph")}
    checks.update(indexes)
    file_store = results.get("file_store", True)
    checks["file_store"] = file_store
    checks["models"] = bool(getattr(container, "warmed", False))
    ok = checks["database"] and checks["models"] and any(indexes.values())
    status = ("ready" if all(indexes.values()) and file_store else "degraded") if ok else "not_ready"
    return JSONResponse({"status": status, "checks": checks}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """Totals over all tenants only (no tenant labels); needs a bearer token when ``KBQA_API__METRICS_TOKEN`` is
    set."""
    container = get_container(request)
    token = container.settings.api.metrics_token
    if token:
        scheme, _, sent = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), token.encode()):
            raise AppError(ErrorCode.UNAUTHENTICATED, "metrics need 'Authorization: Bearer <metrics token>'")
    counts = jobs_by_status(db=container.db)
    if counts is not None:
        container.metrics.set_jobs(counts)
    return Response(generate_latest(container.metrics.registry), media_type=CONTENT_TYPE_LATEST)
