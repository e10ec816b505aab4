"""Liveness, readiness and metrics."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from app.core.db import repositories as repo

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="The process is alive")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get("/readyz", summary="Database and indexes usable, models loaded")
def readyz(request: Request) -> JSONResponse:
    container = request.app.state.container
    checks: dict[str, Any] = {"database": container.db.ping()}
    for name in ("keyword", "vector", "graph"):
        idx = getattr(container.indexes, name)
        try:
            idx.count(None)
            checks[name] = True
        except Exception:  # noqa: BLE001
            checks[name] = False
    checks["models"] = bool(getattr(container, "warmed", False))
    ok = all(checks.values())
    return JSONResponse({"status": "ready" if ok else "not_ready", "checks": checks}, status_code=200 if ok else 503)


@router.get("/metrics", summary="Prometheus metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    container = request.app.state.container
    try:
        with container.db.session() as s:
            container.metrics.set_jobs(repo.count_jobs_by_status(session=s))
    except Exception:  # noqa: BLE001 - metrics must not fail because the DB is down
        pass
    return Response(generate_latest(container.metrics.registry), media_type=CONTENT_TYPE_LATEST)
