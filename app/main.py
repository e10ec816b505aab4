"""Composition root: builds every component from settings and wires the FastAPI application."""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.staticfiles import StaticFiles

from app.api.bodylimit import BodyLimitMiddleware, route_limits
from app.api.errors import error_response, install_error_handlers
from app.api.metrics import Metrics
from app.api.quotas import QuotaLimiter
from app.api.routes import admin, ask, conversations, documents, health, openai_compat, search, session, users
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.logging import configure_logging, request_context
from core.settings import Settings
from core.tracing import configure_tracing

log = logging.getLogger(__name__)

FRONTEND_DIST = Path(__file__).resolve().parent.parent / "frontend" / "dist"


@dataclass
class Container:
    settings: Settings
    db: Database
    embedder: Any
    indexes: Any
    chunk_store: Any
    retriever: Any
    answers: Any
    ingest: Any
    dispatcher: Any
    limiter: QuotaLimiter
    metrics: Metrics = field(default_factory=Metrics)
    warmed: bool = False
    versions: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def warm_up(self) -> None:
        self.embedder.embed_query("warm up")
        # Long-lived objects (models, loaded graphs) leave the GC's generations: no full collection over them.
        gc.collect()
        gc.freeze()
        self.warmed = True

    def start_sweeper(self, interval_s: float = 5.0) -> threading.Thread:
        def loop() -> None:
            while not self._stop.wait(interval_s):
                try:
                    self.ingest.sweep()
                except Exception:  # noqa: BLE001 - keep sweeping
                    log.warning("ingest sweep failed", exc_info=True)

        thread = threading.Thread(target=loop, name="kbqa-sweeper", daemon=True)
        thread.start()
        return thread

    def close(self) -> None:
        self._stop.set()
        for part in (self.dispatcher, self.retriever):
            stop = getattr(part, "shutdown", None) or getattr(part, "close", None)
            if stop:
                stop()
        self.indexes.close()
        self.db.dispose()


def build_container(settings: Settings) -> Container:
    from app.generation.backends import ExtractiveBackend, build_llm
    from app.generation.pipeline import AnswerPipeline
    from app.generation.prompt import PROMPT_TEMPLATE_VERSION
    from core.db.chunk_store import DbChunkStore
    from ingestion.chunking import CHUNKER_VERSION
    from ingestion.executors import CeleryDispatcher, InlineDispatcher
    from ingestion.runtime import build_ingest_runtime
    from ingestion.service import IngestService
    from retrieval.hybrid import HybridRetriever
    from retrieval.rerank import build_reranker

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # The in-process llama.cpp model must load before the vector index's native library (usearch) is imported:
    # the other way round llama.cpp fails to read its vocabulary (std::bad_cast from a second C++ runtime's locale
    # state). So the LLM is built first, and given the embedder afterwards.
    llm = build_llm(settings.generation)
    runtime = build_ingest_runtime(settings)
    db, embedder, indexes = runtime.db, runtime.embedder, runtime.indexes
    if getattr(llm, "embedder", False) is None:
        llm.embedder = embedder  # type: ignore[attr-defined]  # the extractive backend ranks sentences with it
    store = DbChunkStore(db)
    retriever = HybridRetriever(
        keyword=indexes.keyword,
        vector=indexes.vector,
        graph=indexes.graph,
        embedder=embedder,
        store=store,
        settings=settings.retrieval,
        reranker=build_reranker(settings.retrieval),
    )
    versions = {
        "chunker": CHUNKER_VERSION,
        "embedder": f"{embedder.model_name}@{embedder.model_version}",
        "prompt_template": PROMPT_TEMPLATE_VERSION,
        "model": f"{llm.name}:{llm.model}",
    }
    answers = AnswerPipeline(
        retriever=retriever,
        llm=llm,
        fallback=ExtractiveBackend(embedder, context_window=settings.generation.context_window),
        embedder=embedder,
        settings=settings.generation,
        versions=versions,
    )
    dispatcher: Any
    if settings.ingestion.executor == "celery":
        dispatcher = CeleryDispatcher(settings)
    else:
        dispatcher = InlineDispatcher(runtime.pipeline.run)
    ingest = IngestService(settings=settings, db=db, dispatcher=dispatcher, indexes=indexes, files=runtime.files)
    limiter = QuotaLimiter(
        requests_per_minute=settings.api.requests_per_minute,
        tokens_per_minute=settings.api.tokens_per_minute,
        logins_per_minute=settings.api.login_attempts_per_minute,
        redis_url=settings.redis_url,
    )
    return Container(
        settings=settings,
        db=db,
        embedder=embedder,
        indexes=indexes,
        chunk_store=store,
        retriever=retriever,
        answers=answers,
        ingest=ingest,
        dispatcher=dispatcher,
        limiter=limiter,
        versions=versions,
    )


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

    for module in (health, session, ask, search, documents, conversations, admin, users, openai_compat):
        app.include_router(module.router)
    if FRONTEND_DIST.is_dir():
        app.mount("/", StaticFiles(directory=FRONTEND_DIST, html=True), name="frontend")
    return app
