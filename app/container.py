"""Composition root: builds every long-lived part of the API process from settings, typed."""

from __future__ import annotations

import functools
import gc
import logging
import threading
from dataclasses import dataclass, field

from app.generation.pipeline import AnswerPipeline
from app.services.answers import AnswerService
from app.services.ingestion import rebuild_legacy_keyword_index, recover_after_restart
from app.services.metrics import Metrics
from app.services.quotas import QuotaLimiter
from core.db.session import Database
from core.settings import Settings
from ingestion.executors import CeleryDispatcher, InlineDispatcher
from ingestion.service import IngestService
from retrieval.hybrid import HybridRetriever
from retrieval.indexes import Indexes
from retrieval.protocols import ChunkStore, Embedder

log = logging.getLogger(__name__)


@dataclass
class Container:
    """Every long-lived part of one API process, built once by :func:`build_container`; routes reach it through
    :func:`app.api.deps.container` (typed), never through ``request.app.state`` directly."""

    settings: Settings
    db: Database
    embedder: Embedder
    indexes: Indexes
    chunk_store: ChunkStore
    retriever: HybridRetriever
    answers: AnswerPipeline
    ingest: IngestService
    dispatcher: InlineDispatcher | CeleryDispatcher
    limiter: QuotaLimiter
    metrics: Metrics = field(default_factory=Metrics)
    warmed: bool = False
    versions: dict[str, str] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    @functools.cached_property
    def answer_service(self) -> AnswerService:
        return AnswerService(
            settings=self.settings, db=self.db, pipeline=self.answers, metrics=self.metrics, limiter=self.limiter
        )

    def warm_up(self) -> None:
        self.embedder.embed_query("warm up")
        # Long-lived objects (models, loaded graphs) leave the GC's generations: no full collection over them.
        gc.collect()
        gc.freeze()
        self.warmed = True

    def start_sweeper(self, interval_s: float = 5.0) -> threading.Thread:
        if self.settings.ingestion.executor == "inline":
            try:
                recover_after_restart(db=self.db)
            except Exception:  # noqa: BLE001 - a database that is down now is retried by the sweeps (leases)
                log.warning("could not re-queue unfinished ingestion jobs at start", exc_info=True)
        try:
            with self.indexes.writing():
                rebuild_legacy_keyword_index(db=self.db, chunk_store=self.chunk_store, keyword=self.indexes.keyword)
        except Exception:  # noqa: BLE001 - keyword search stays empty for old documents; logged, retried next start
            log.warning("could not rebuild the keyword index per tenant", exc_info=True)

        def loop() -> None:
            first = True
            while first or not self._stop.wait(interval_s):
                first = False
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


def _job_tenant(db: Database, job_id: str) -> str:
    from core.db import repositories as repo

    with db.session() as s:
        return repo.job_tenant(session=s, job_id=job_id)


def build_container(settings: Settings) -> Container:
    """The one place the API process's parts are built from settings. The query side's indexes come from
    :func:`retrieval.indexes.build_indexes` (the same function the ingestion workers use)."""
    from app.generation.backends import ExtractiveBackend, build_llm
    from app.generation.prompt import PROMPT_TEMPLATE_VERSION
    from core.db.chunk_store import DbChunkStore
    from core.filestore import build_file_store
    from ingestion.chunking import CHUNKER_VERSION
    from ingestion.entities import EntityExtractor
    from ingestion.pipeline import IngestPipeline
    from retrieval.embedders import build_embedder
    from retrieval.indexes import build_indexes
    from retrieval.rerank import build_reranker

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    # The in-process llama.cpp model must load before the vector index's native library (usearch) is imported:
    # the other way round llama.cpp fails to read its vocabulary (std::bad_cast from a second C++ runtime's locale
    # state). So the LLM is built first, and given the embedder afterwards.
    llm = build_llm(settings.generation)
    db = Database(settings.database_url, connect_timeout_s=settings.database.connect_timeout_s)
    # embedded mode answers and ingests in this process: queries get their own model instance (queries first, #12)
    embedder = build_embedder(
        settings.embedding,
        query_lane=settings.embedding.query_instance and settings.ingestion.executor == "inline",
    )
    indexes = build_indexes(settings, embedder, db)
    files = build_file_store(settings)
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
        reranker=build_reranker(settings.retrieval, embedder),
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
        chunk_store=store,
    )
    dispatcher: InlineDispatcher | CeleryDispatcher
    if settings.ingestion.executor == "celery":
        dispatcher = CeleryDispatcher(settings, tenant_of=lambda job_id: _job_tenant(db, job_id))
    else:  # embedded mode: this process runs the pipeline itself, on the same indexes it searches
        pipeline = IngestPipeline(
            settings=settings, db=db, indexes=indexes, embedder=embedder, extractor=EntityExtractor(), files=files
        )
        dispatcher = InlineDispatcher(
            pipeline.run,
            workers=settings.ingestion.inline_workers,
            tenant_of=lambda job_id: _job_tenant(db, job_id),
            nice=settings.ingestion.inline_nice,
        )
    ingest = IngestService(settings=settings, db=db, dispatcher=dispatcher, indexes=indexes, files=files)
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
