"""OpenTelemetry set-up and W3C trace-context helpers.

``configure_tracing`` installs a tracer provider once per process; spans are exported over OTLP/HTTP only when
``KBQA_OTLP_ENDPOINT`` is set (otherwise they are created and dropped, so context still propagates). The API stores
the W3C ``traceparent`` of the upload request on the ingestion job (``inject``), and the pipeline continues that trace
(``extract``) whichever process runs it: the in-process executor, a Celery worker, or a retry after a lease expired.

Spans are batched (``OTEL_BSP_SCHEDULE_DELAY``, default 5 s). A process that exits without running ``atexit`` hooks (a
Celery pool child) must call ``shutdown_tracing`` first, or its last batch is lost.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

log = logging.getLogger(__name__)
_lock = threading.Lock()
_provider: TracerProvider | None = None


def configure_tracing(
    service_name: str, otlp_endpoint: str = "", *, extra_processor: SpanProcessor | None = None
) -> TracerProvider:
    """Install (once) and return the process's tracer provider."""
    global _provider
    with _lock:
        if _provider is None:
            # process.pid tells apart the processes of one service (API replicas, Celery pool children)
            resource = Resource.create({"service.name": service_name, "process.pid": os.getpid()})
            _provider = TracerProvider(resource=resource)
            if otlp_endpoint:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                _provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=otlp_endpoint)))
            trace.set_tracer_provider(_provider)
        if extra_processor is not None:
            _provider.add_span_processor(extra_processor)
        return _provider


def shutdown_tracing(timeout_ms: int = 5000) -> None:
    """Export the spans still buffered and stop the exporter (call before a process exits without ``atexit``)."""
    with _lock:
        provider = _provider
    if provider is not None:
        if not provider.force_flush(timeout_ms):
            log.warning("trace export did not finish within %d ms; the last spans may be lost", timeout_ms)
        provider.shutdown()  # ends the export thread; a second call (atexit) is a no-op


def tracer(name: str = "kbqa") -> trace.Tracer:
    return trace.get_tracer(name)


def inject() -> dict[str, str]:
    """The current trace context as W3C headers (``traceparent``, ``tracestate``)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


def extract(carrier: dict[str, Any] | None) -> Any:
    """A context to start spans in, continuing the trace in ``carrier`` (or a new trace if empty)."""
    return propagate.extract(carrier or {})
