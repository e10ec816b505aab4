"""Prometheus metrics of the query service, read back from the scrape text: retrieval latency per stage and skipped
retrievers, from an answer's ``done`` event and from ``/api/v1/search``. The hybrid retriever and answer pipeline are
the real ones; the indexes and reranker under them are fakes."""

from __future__ import annotations

import asyncio

import pytest
from fastapi.testclient import TestClient
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from app.generation.backends import ExtractiveBackend
from app.generation.events import Done, Error
from app.generation.pipeline import AnswerPipeline
from app.main import create_app
from app.services.metrics import Metrics
from core.db import repositories as repo
from core.settings import GenerationSettings, RetrievalSettings
from core.types import ChunkRecord, Role, SearchFilter
from evaluation.beir import DictChunkStore
from retrieval.hybrid import HybridRetriever
from retrieval.null import NullGraphIndex
from tests.fakes import FakeEmbedder, FakeFailingIndex, FakeIndex, FakeLengthReranker
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

FLT = SearchFilter(tenant_id="t")
STORE = DictChunkStore(
    [
        ChunkRecord(id=c, tenant_id="t", document_id=f"d-{c}", document_version=1, title="Kestrel Hub",
                    text=f"The Kestrel Hub warranty lasts 24 months ({c}).")
        for c in "abc"
    ]
)
Sample = tuple[str, frozenset[tuple[str, str]]]


def retriever(keyword: FakeIndex, vector: FakeIndex, graph: object, reranker: FakeLengthReranker | None = None
              ) -> HybridRetriever:
    return HybridRetriever(keyword, vector, graph, FakeEmbedder(), STORE,  # type: ignore[arg-type]
                           RetrievalSettings(timeout_s=2.0), reranker)


def scrape(metrics: Metrics) -> dict[Sample, float]:
    text = generate_latest(metrics.registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def sample(name: str, **labels: str) -> Sample:
    return name, frozenset(labels.items())


def stages_observed(samples: dict[Sample, float]) -> dict[str, float]:
    return {
        dict(labels)["stage"]: value
        for (name, labels), value in samples.items()
        if name == "kbqa_retrieval_seconds_count"
    }


def answer(r: HybridRetriever) -> list[object]:
    pipe = AnswerPipeline(r, ExtractiveBackend(), ExtractiveBackend(), None, GenerationSettings(), {})

    async def collect() -> list[object]:
        return [e async for e in pipe.run("How long is the Kestrel Hub warranty?", flt=FLT, history=[],
                                          request_id="r", conversation_id="c", message_id="m", top_k=3)]

    try:
        return asyncio.run(collect())
    finally:
        r.close()


def test_answer_done_carries_retrieval_timings_into_the_stage_histogram_and_degraded_counter() -> None:
    parts = FakeIndex(["a", "b"]), FakeFailingIndex(["c"]), FakeIndex(["b", "c"])
    events = answer(retriever(*parts, FakeLengthReranker()))
    done = events[-1]
    assert isinstance(done, Done)
    assert {"keyword", "vector", "graph", "fuse", "rerank", "total"} <= set(done.retrieval_timings_ms)
    assert done.retrieval_degraded == ["vector"]

    metrics = Metrics()
    metrics.observe_answer(done)
    samples = scrape(metrics)
    # the vector retriever failed: counted as skipped, its time-to-failure kept out of the latency histogram
    assert stages_observed(samples) == {"keyword": 1, "graph": 1, "fuse": 1, "links": 1, "rerank": 1, "total": 1}
    assert samples[sample("kbqa_retrieval_degraded_total", stage="vector")] == 1
    assert sample("kbqa_retrieval_degraded_total", stage="keyword") not in samples
    seconds = samples[sample("kbqa_retrieval_seconds_sum", stage="total")]
    assert seconds == pytest.approx(done.retrieval_timings_ms["total"] / 1000, abs=1e-4)
    # the answer-stage histogram is unchanged: cumulative marks of the answer
    assert samples[sample("kbqa_answer_stage_seconds_count", stage="retrieve")] == 1


def test_a_disabled_retriever_has_no_latency_series() -> None:
    events = answer(retriever(FakeIndex(["a"]), FakeIndex(["b"]), NullGraphIndex()))
    done = events[-1]
    assert isinstance(done, Done) and "graph" not in done.retrieval_timings_ms
    metrics = Metrics()
    metrics.observe_answer(done)
    assert stages_observed(scrape(metrics)) == {"keyword": 1, "vector": 1, "fuse": 1, "links": 1, "total": 1}


def test_every_retriever_failing_counts_each_one() -> None:
    events = answer(retriever(FakeFailingIndex([]), FakeFailingIndex([]), FakeFailingIndex([])))
    assert isinstance(events[-2], Error) and events[-2].code == "index_unavailable"
    done = events[-1]
    assert isinstance(done, Done) and done.retrieval_timings_ms == {}
    metrics = Metrics()
    metrics.observe_answer(done)
    samples = scrape(metrics)
    for stage in ("keyword", "vector", "graph"):
        assert samples[sample("kbqa_retrieval_degraded_total", stage=stage)] == 1
    assert stages_observed(samples) == {}


@pytest.fixture
def search_api(make_settings):  # noqa: ANN201
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0})
    parts = {"good": retriever(FakeIndex(["a", "b"]), FakeIndex(["b"]), FakeFailingIndex([]), FakeLengthReranker()),
             "down": retriever(FakeFailingIndex([]), FakeFailingIndex([]), FakeFailingIndex([]))}
    container = fake_container(settings, retriever=parts["good"])
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="t", name="agent", role=Role.AGENT)
    with TestClient(create_app(settings, container=container, sweeper=False)) as client:
        client.headers["Authorization"] = f"Bearer {key}"
        yield client, container, parts
    for r in parts.values():
        r.close()
    container.db.dispose()


def test_search_route_observes_the_same_retrieval_metrics(search_api) -> None:  # noqa: ANN001
    client, container, parts = search_api
    for _ in range(2):
        r = client.get("/api/v1/search", params={"q": "warranty"})
        assert r.status_code == 200 and r.json()["degraded"] == ["graph"]
    container.retriever = parts["down"]
    assert client.get("/api/v1/search", params={"q": "warranty"}).status_code == 503

    samples = scrape(container.metrics)
    assert stages_observed(samples) == {"keyword": 2, "vector": 2, "fuse": 2, "links": 2, "rerank": 2, "total": 2}
    assert samples[sample("kbqa_retrieval_degraded_total", stage="graph")] == 3
    assert samples[sample("kbqa_retrieval_degraded_total", stage="keyword")] == 1
    # and it is what /metrics serves
    body = client.get("/metrics").text
    assert 'kbqa_retrieval_seconds_count{stage="rerank"} 2.0' in body
    assert 'kbqa_retrieval_degraded_total{stage="graph"} 3.0' in body
