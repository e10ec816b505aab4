"""Prometheus metrics for the query service."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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
        self.tokens = Counter("kbqa_tokens_total", "Tokens", ["kind"], registry=r)
        self.answers = Counter("kbqa_answers_total", "Answers by outcome", ["outcome"], registry=r)
        self.jobs = Gauge("kbqa_ingestion_jobs", "Ingestion jobs by state", ["state"], registry=r)
        self.queue_depth = Gauge("kbqa_ingestion_queue_depth", "Jobs waiting or running", registry=r)

    def observe_answer(self, done: dict[str, Any]) -> None:
        for stage, ms in (done.get("timings_ms") or {}).items():
            if isinstance(ms, int | float):
                self.stage.labels(stage=stage).observe(ms / 1000.0)
        usage = done.get("usage") or {}
        self.tokens.labels(kind="prompt").inc(int(usage.get("prompt_tokens", 0)))
        self.tokens.labels(kind="completion").inc(int(usage.get("completion_tokens", 0)))
        outcome = "refused" if done.get("refused") else "degraded" if done.get("degraded") else "answered"
        self.answers.labels(outcome=outcome).inc()

    def set_jobs(self, counts: dict[str, int]) -> None:
        for state in ("queued", "parsing", "chunking", "embedding", "indexing", "indexed", "failed"):
            self.jobs.labels(state=state).set(counts.get(state, 0))
        self.queue_depth.set(sum(n for s, n in counts.items() if s not in ("indexed", "failed")))
