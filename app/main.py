"""The FastAPI application: middleware, routers, lifespan. Its parts come from :mod:`app.container`."""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles
from starlette.routing import Route

from app.api import mcp
from app.api.bodylimit import BodyLimitMiddleware, route_limits
from app.api.errors import error_response, install_error_handlers
from app.api.routes import (
    admin,
    ask,
    conversations,
    documents,
    health,
    openai_compat,
    review,
    search,
    session,
    sso,
    users,
)
from app.container import Container, build_container
from core.errors import AppError, ErrorCode
from core.logging import configure_logging, request_context
from core.settings import Settings
from core.tracing import configure_tracing

log = logging.getLogger(__name__)

FRONTEND_DIST = Path(__file__).resolve().parent.parent / "frontend" / "dist"


def _instrument(app: FastAPI, settings: Settings) -> None:
    """OpenTelemetry for FastAPI, SQLAlchemy, httpx and Celery publishing (exported only when KBQA_OTLP_ENDPOINT is
    set)."""
    from opentelemetry.instrumentation.fastapi import FastAPIInstrumentor
    from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
    from opentelemetry.instrumentation.sqlalchemy import SQLAlchemyInstrumentor

    configure_tracing("kbqa-api", settings.otlp_endpoint)
    FastAPIInstrumentor.instrument_app(app, excluded_urls="healthz,readyz,metrics")
    if not HTTPXClientInstrumentor().is_instrumented_by_opentelemetry:
        HTTPXClientInstrumentor().instrument()
    if not SQLAlchemyInstrumentor().is_instrumented_by_opentelemetry:
        SQLAlchemyInstrumentor().instrument()
    if settings.ingestion.executor == "celery":
        # The publish span carries the request's trace context in the task headers, so the worker's Celery span
        # joins the upload's trace too (the pipeline itself continues the traceparent stored on the job).
        from opentelemetry.instrumentation.celery import CeleryInstrumentor

        if not CeleryInstrumentor().is_instrumented_by_opentelemetry:
            CeleryInstrumentor().instrument()


# The web app loads only its own scripts and styles and talks only to this origin; nothing may frame it. The API
# docs pages load Swagger UI from a CDN, so they are left without a policy (they are not the product's UI).
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
_NO_CSP = ("/docs", "/redoc")
_API_PREFIXES = ("/api/", "/v1/")


def _security_headers(response: Response, path: str, *, secure: bool) -> None:
    h = response.headers
    h.setdefault("X-Content-Type-Options", "nosniff")
    h.setdefault("Referrer-Policy", "no-referrer")
    h.setdefault("X-Frame-Options", "DENY")
    if not path.startswith(_NO_CSP):
        h.setdefault("Content-Security-Policy", CSP)
    if path.startswith(_API_PREFIXES):
        # Answers carry tenant data (lists, who-am-I, documents): no shared or browser cache may keep them.
        h.setdefault("Cache-Control", "no-store")
    if secure:
        h.setdefault("Strict-Transport-Security", "max-age=31536000; includeSubDomains")


def create_app(
    settings: Settings | None = None, *, container: Container | None = None, sweeper: bool = True
) -> FastAPI:
    settings = settings or (container.settings if container else Settings())
    settings.ensure_secret_key()  # local mode: generated on first start and kept in the data dir (0600)
    if container is not None:
        container.settings.ensure_secret_key()
    configure_logging(settings.log_level)
    mcp_server = mcp.build_mcp_server()

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = app.state.container is None
        if own:
            app.state.container = build_container(settings)
        c: Container = app.state.container
        c.warm_up()
        if sweeper:
            c.start_sweeper()
        log.info("kbqa ready", extra={"versions": c.versions})
        async with mcp.running(mcp_server):  # the MCP endpoint's session manager runs as long as the app
            yield
        if own:
            c.close()
        else:
            c._stop.set()

    app = FastAPI(
        title="kbqa",
        version="0.1.0",
        description="Enterprise knowledge-base question answering: cited, streamed answers over your documents.",
        lifespan=lifespan,
    )
    app.state.container = container
    install_error_handlers(app)
    _instrument(app, settings)
    # Inside the request-id middleware (so a 413 carries the usual headers), outside routing, parsing and auth.
    app.add_middleware(
        BodyLimitMiddleware,
        limit_for=route_limits(
            json_bytes=settings.api.max_body_bytes,
            chat_bytes=settings.api.max_chat_body_bytes,
            # One file of the largest allowed size always fits, whatever the request limit says.
            upload_bytes=max(settings.api.max_upload_request_bytes, settings.ingestion.max_upload_bytes + 64 * 1024),
        ),
    )

    @app.middleware("http")
    async def request_id_and_metrics(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        rid = request.headers.get("x-request-id") or uuid.uuid4().hex
        request.state.request_id = rid
        started = time.perf_counter()
        c = app.state.container
        versions = c.versions if c is not None else {}
        with request_context(
            request_id=rid,
            chunker=versions.get("chunker"),
            embedder=versions.get("embedder"),
            prompt_template=versions.get("prompt_template"),
        ):
            try:
                response = await call_next(request)
            except AppError as exc:
                response = error_response(exc)
            except Exception:  # noqa: BLE001
                log.exception("unhandled error")
                response = error_response(AppError(ErrorCode.INTERNAL, "internal error"))
        response.headers["X-Request-ID"] = rid
        _security_headers(response, request.url.path, secure=settings.environment != "local")
        route = request.scope.get("route")
        if c is not None:
            c.metrics.requests.labels(
                request.method, getattr(route, "path", "unmatched"), str(response.status_code)
            ).observe(time.perf_counter() - started)
        return response

    for module in (health, session, sso, ask, search, documents, conversations, review, admin, users, openai_compat):
        app.include_router(module.router)
    # MCP tools over streamable HTTP (search, ask, passages), authenticated by API key like the REST API.
    app.router.routes.append(Route(mcp.MCP_PATH, endpoint=mcp.McpEndpoint(mcp_server), name="mcp"))
    if FRONTEND_DIST.is_dir():
        app.mount("/", StaticFiles(directory=FRONTEND_DIST, html=True), name="frontend")
    return app
