"""Prometheus metrics for the query service.

Retrieval is measured per stage of the hybrid retriever, for answers and for ``/api/v1/search`` alike:
``kbqa_retrieval_seconds{stage}`` with stage ``keyword``, ``vector``, ``graph`` (each configured retriever; they run in
parallel), then ``fuse`` and ``rerank`` (sequential, after the slowest retriever) and ``total``. A stage that failed or
timed out is not observed there but counted in ``kbqa_retrieval_degraded_total{stage}`` (``keyword``, ``vector``,
``graph``, ``rerank``). ``kbqa_answer_stage_seconds{stage}`` is different: the time from the start of an answer to the
end of each answer stage (``rewrite``, ``retrieve``, ``sources``, ``first_token``, ``citations``, ``total``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from app.generation.events import Done

_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Histogram(
            "kbqa_http_request_seconds",
            "HTTP request latency",
            ["method", "route", "status"],
            registry=r,
            buckets=_BUCKETS,
        )
        self.stage = Histogram(
            "kbqa_answer_stage_seconds", "Answer pipeline stage latency", ["stage"], registry=r, buckets=_BUCKETS
        )
        self.retrieval = Histogram(
            "kbqa_retrieval_seconds",
            "Hybrid retrieval latency per stage (keyword, vector, graph, fuse, and within fuse hop2 and links, rerank,"
            " total)",
            ["stage"],
            registry=r,
            buckets=_BUCKETS,
        )
        self.retrieval_degraded = Counter(
            "kbqa_retrieval_degraded_total",
            "Retrieval stages skipped because they failed or timed out",
            ["stage"],
            registry=r,
        )
        self.tokens = Counter("kbqa_tokens_total", "Tokens", ["kind"], registry=r)
        self.answers = Counter("kbqa_answers_total", "Answers by outcome", ["outcome"], registry=r)
        self.jobs = Gauge("kbqa_ingestion_jobs", "Ingestion jobs by state", ["state"], registry=r)
        self.queue_depth = Gauge("kbqa_ingestion_queue_depth", "Jobs waiting or running", registry=r)

    def observe_answer(self, done: Done) -> None:
        for stage, ms in done.timings_ms.items():
            if isinstance(ms, int | float):
                self.stage.labels(stage=stage).observe(ms / 1000.0)
        self.observe_retrieval(done.retrieval_timings_ms, done.retrieval_degraded)
        self.tokens.labels(kind="prompt").inc(int(done.usage.get("prompt_tokens", 0)))
        self.tokens.labels(kind="completion").inc(int(done.usage.get("completion_tokens", 0)))
        outcome = "refused" if done.refused else "degraded" if done.degraded else "answered"
        self.answers.labels(outcome=outcome).inc()

    def observe_retrieval(self, timings_ms: Mapping[str, Any], degraded: Iterable[str]) -> None:
        """One hybrid retrieval: ``RetrievalResult.timings_ms`` and ``.degraded`` (or the same fields of a ``done``)."""
        skipped = set(degraded)
        for stage in skipped:
            self.retrieval_degraded.labels(stage=stage).inc()
        for stage, ms in timings_ms.items():
            if stage not in skipped and isinstance(ms, int | float):
                self.retrieval.labels(stage=stage).observe(ms / 1000.0)

    def set_jobs(self, counts: dict[str, int]) -> None:
        for state in ("queued", "parsing", "chunking", "embedding", "indexing", "indexed", "failed"):
            self.jobs.labels(state=state).set(counts.get(state, 0))
        self.queue_depth.set(sum(n for s, n in counts.items() if s not in ("indexed", "failed")))
