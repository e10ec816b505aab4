"""Liveness, readiness and metrics."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from core.db import repositories as repo
from core.errors import AppError, ErrorCode

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Ready: database usable, models loaded, at least one index usable")
def readyz(request: Request) -> JSONResponse:
    """200 ``ready``, or 200 ``degraded`` while some index or the file store is down (the others still answer, so the
    replica stays in the load balancer), or 503 ``not_ready`` without the database, the models, or any index."""
    container = request.app.state.container
    checks: dict[str, Any] = {"database": container.db.ping()}
    indexes: dict[str, bool] = {}
    for name in ("keyword", "vector", "graph"):
        idx = getattr(container.indexes, name)
        try:
            idx.count(None)
            indexes[name] = True
        except Exception:  # noqa: BLE001
            indexes[name] = False
    checks.update(indexes)
    # Uploads and ingestion need the file store; answering does not: without it the replica is degraded, not down.
    files = getattr(getattr(container, "ingest", None), "files", None)
    file_store = True if files is None else bool(files.ping())
    checks["file_store"] = file_store
    checks["models"] = bool(getattr(container, "warmed", False))
    ok = checks["database"] and checks["models"] and any(indexes.values())
    status = ("ready" if all(indexes.values()) and file_store else "degraded") if ok else "not_ready"
    return JSONResponse({"status": status, "checks": checks}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    """Totals over all tenants only (no tenant labels); needs a bearer token when ``KBQA_API__METRICS_TOKEN`` is
    set."""
    container = request.app.state.container
    token = container.settings.api.metrics_token
    if token:
        scheme, _, sent = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(sent.strip().encode(), token.encode()):
            raise AppError(ErrorCode.UNAUTHENTICATED, "metrics need 'Authorization: Bearer <metrics token>'")
    try:
        with container.db.session() as s:
            container.metrics.set_jobs(repo.count_jobs_by_status(session=s))
    except Exception:  # noqa: BLE001 - metrics must not fail because the DB is down
        pass
    return Response(generate_latest(container.metrics.registry), media_type=CONTENT_TYPE_LATEST)
