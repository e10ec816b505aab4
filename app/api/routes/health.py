"""Liveness, readiness and metrics."""

from __future__ import annotations

import hmac
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.api.deps import get_container
from app.services.ingestion import jobs_by_status
from core.errors import AppError, ErrorCode

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Ready: database usable, models loaded, at least one index usable")
def readyz(request: Request) -> JSONResponse:
    """200 ``ready``, or 200 ``degraded`` while some index is down (the others still answer, so the replica stays in
    the load balancer), or 503 ``not_ready`` without the database, the models, or any index."""
    container = get_container(request)
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
    checks["models"] = bool(getattr(container, "warmed", False))
    ok = checks["database"] and checks["models"] and any(indexes.values())
    status = ("ready" if all(indexes.values()) else "degraded") if ok else "not_ready"
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
