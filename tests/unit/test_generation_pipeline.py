"""AnswerPipeline event flow with fake retriever and fake LLMs."""

from __future__ import annotations

import pytest

from app.generation.answerability import decide
from app.generation.backends import ExtractiveBackend
from app.generation.events import Citations, Degraded, Done, Error, Meta, Sources, Token
from app.generation.pipeline import AnswerPipeline
from app.generation.prompt import REFUSAL_TEXT
from app.generation.resilience import BreakerState, CircuitBreaker
from core.errors import AppError, ErrorCode
from core.settings import GenerationSettings
from core.types import ChunkRecord, RankedChunk, SearchFilter
from retrieval.protocols import RetrievalResult
from tests.fakes import FakeChunkStore, FakeLLM, FakeRetriever

pytestmark = pytest.mark.unit

TEXT = "The oil embargo began in October 1973. Prices rose from three to twelve dollars."
GOOD = RankedChunk(
    chunk=ChunkRecord(id="c1", tenant_id="t", document_id="d1", document_version=1, title="1973 oil crisis",
                      text=TEXT, section_path=("History",), page_start=2, page_end=2),
    score=0.03, scores={"keyword": 12.0, "vector": 0.82}, ranks={"keyword": 1, "vector": 1},
)
WEAK = RankedChunk(
    chunk=ChunkRecord(id="c9", tenant_id="t", document_id="d9", document_version=1, title="Cats",
                      text="Cats sleep most of the day."),
    score=0.01, scores={"vector": 0.05}, ranks={"vector": 1},
)
QUESTION = "When did the oil embargo begin?"


def pipeline(retriever: FakeRetriever, llm: FakeLLM, **kw) -> AnswerPipeline:  # type: ignore[no-untyped-def]
    settings = GenerationSettings(first_token_timeout_s=kw.pop("ftt", 5.0))
    return AnswerPipeline(retriever, llm, ExtractiveBackend(), None, settings,
                          {"chunker": "c1", "embedder": "e1"}, **kw)


async def collect(p: AnswerPipeline, question: str = QUESTION, history=None) -> list:  # type: ignore[no-untyped-def]
    return [e async for e in p.run(question, flt=SearchFilter(tenant_id="t"), history=history or [],
                                   request_id="r", conversation_id="c", message_id="m", top_k=5)]


def types(events: list) -> list[str]:  # type: ignore[type-arg]
    return [e.type for e in events]


def test_fixture_decisions() -> None:
    assert decide(QUESTION, [GOOD]).answerable
    assert not decide(QUESTION, [WEAK]).answerable


@pytest.mark.asyncio
async def test_happy_path_order_tokens_citations_done() -> None:
    llm = FakeLLM(["The embargo began in Oct", "ober 1973 [", "1", "][7]."])
    events = await collect(pipeline(FakeRetriever([GOOD]), llm))
    assert types(events)[:2] == ["meta", "sources"] and types(events)[-2:] == ["citations", "done"]
    meta, sources, done = events[0], events[1], events[-1]
    assert isinstance(meta, Meta) and meta.versions == {"chunker": "c1", "embedder": "e1",
                                                        "prompt_template": "kbqa-answer-v2", "model": "fake-1"}
    assert isinstance(sources, Sources) and sources.sources[0]["chunk_id"] == "c1" and sources.sources[0]["n"] == 1
    answer = "".join(e.text for e in events if isinstance(e, Token))
    assert answer == "The embargo began in October 1973 [1]." == done.answer  # [7] points nowhere: dropped
    cites = next(e for e in events if isinstance(e, Citations)).citations
    assert cites[0]["chunk_id"] == "c1" and cites[0]["supported"] and cites[0]["section"] == "History"
    assert isinstance(done, Done) and not done.refused and not done.degraded
    assert done.usage["prompt_tokens"] > 0 and done.usage["completion_tokens"] == 7
    assert {"retrieve", "sources", "first_token", "total"} <= set(done.timings_ms)


@pytest.mark.asyncio
async def test_refusal_when_evidence_absent() -> None:
    llm = FakeLLM(["should not be called"])
    events = await collect(pipeline(FakeRetriever([WEAK]), llm))
    assert types(events) == ["meta", "sources", "token", "citations", "done"]
    assert events[2].text.startswith(REFUSAL_TEXT) and events[-1].refused and llm.calls == 0
    assert events[-1].outcome == "not_found" and "nearest sections" in events[2].text
    assert events[1].sources[0]["chunk_id"] == "c9"  # nearest sources are still shown


@pytest.mark.asyncio
async def test_model_refusal_is_flagged() -> None:
    events = await collect(pipeline(FakeRetriever([GOOD]), FakeLLM([REFUSAL_TEXT])))
    assert events[-1].refused and events[-1].answer == REFUSAL_TEXT


@pytest.mark.asyncio
async def test_refusal_when_nothing_retrieved() -> None:
    events = await collect(pipeline(FakeRetriever([]), FakeLLM(["x"])))
    assert events[-1].refused and events[1].sources == []


@pytest.mark.asyncio
async def test_retrieval_degraded_is_reported_before_sources() -> None:
    events = await collect(pipeline(FakeRetriever([GOOD], degraded=["graph"]), FakeLLM(["Yes [1]."])))
    assert types(events)[:3] == ["meta", "degraded", "sources"]
    assert events[1].reasons == ["graph"] and events[-1].degraded


@pytest.mark.asyncio
async def test_llm_down_falls_back_to_extractive() -> None:
    llm = FakeLLM(["never"], fail_before=10)
    events = await collect(pipeline(FakeRetriever([GOOD]), llm, retries=1))
    deg = [e for e in events if isinstance(e, Degraded)]
    assert deg and deg[0].reasons == ["llm_fallback"] and llm.calls == 2
    done = events[-1]
    assert done.degraded and "October 1973 [1]" in done.answer
    assert types(events).index("degraded") < types(events).index("token")


@pytest.mark.asyncio
async def test_first_token_timeout_falls_back_and_closes_stream() -> None:
    llm = FakeLLM(["late"], hang=True)
    events = await collect(pipeline(FakeRetriever([GOOD]), llm, ftt=0.05))
    assert any(isinstance(e, Degraded) and e.reasons == ["llm_fallback"] for e in events)
    assert llm.closed == 1 and "October 1973" in events[-1].answer


@pytest.mark.asyncio
async def test_open_breaker_skips_llm() -> None:
    breaker = CircuitBreaker(failure_threshold=1, reset_timeout_s=60)
    llm = FakeLLM(["never"], fail_before=10)
    p = pipeline(FakeRetriever([GOOD]), llm, breaker=breaker, retries=0)
    await collect(p)
    assert breaker.state is BreakerState.OPEN and llm.calls == 1
    events = await collect(p)
    assert llm.calls == 1 and events[-1].degraded


@pytest.mark.asyncio
async def test_error_mid_stream_gives_error_then_done() -> None:
    llm = FakeLLM(["The embargo ", "began"], fail_after_first=True)
    events = await collect(pipeline(FakeRetriever([GOOD]), llm, retries=3))
    assert types(events)[-2:] == ["error", "done"] and llm.calls == 1
    assert isinstance(events[-2], Error) and events[-2].code == "dependency_unavailable"
    assert events[-1].answer == "The embargo "


@pytest.mark.asyncio
async def test_retriever_failure_gives_error_then_done() -> None:
    class FailingRetriever(FakeRetriever):
        async def retrieve(self, query: str, flt: SearchFilter, top_k: int) -> RetrievalResult:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, "index down")

    events = await collect(pipeline(FailingRetriever([]), FakeLLM(["x"])))
    assert types(events) == ["meta", "error", "done"] and events[1].code == "index_unavailable"


@pytest.mark.asyncio
async def test_follow_up_is_rewritten_before_retrieval() -> None:
    retriever = FakeRetriever([GOOD])
    history = [{"role": "user", "content": "When did the oil embargo begin?"},
               {"role": "assistant", "content": "October 1973 [1]."}]
    await collect(pipeline(retriever, FakeLLM(["When did the oil embargo end?"]), rewrite_with_llm=False),
                  "And when did it end?", history)
    assert "embargo" in retriever.queries[0]


@pytest.mark.asyncio
async def test_a_follow_up_reads_the_section_the_previous_answer_came_from_within_the_callers_filter() -> None:
    def record(cid: str, groups: tuple[str, ...] = ()) -> ChunkRecord:
        return ChunkRecord(id=cid, tenant_id="t", document_id="d5", document_version=1, title="Known Issues",
                           text=f"Hub firmware 3.4.2 fixes it ({cid}).", section_path=("Locks",), acl_groups=groups)

    store = FakeChunkStore([record("c5"), record("c6", ("hr",))])
    retriever = FakeRetriever([GOOD])
    history = [{"role": "user", "content": "My lock says 0 percent"},
               {"role": "assistant", "content": "From *Known Issues › Locks*: ...",
                "unit": {"document_id": "d5", "label": "Known Issues › Locks", "chunk_ids": ["c5", "c6", "c404"]}}]
    p = pipeline(retriever, FakeLLM(["x"]), rewrite_with_llm=False, chunk_store=store)
    flt = SearchFilter(tenant_id="t", acl_groups=("support",))
    events = [e async for e in p.run("when is the fix coming?", flt=flt, history=history, request_id="r",
                                     conversation_id="c", message_id="m", top_k=5)]
    ids = [s["chunk_id"] for s in next(e for e in events if isinstance(e, Sources)).sources]
    assert "c5" in ids  # the section being discussed is a candidate although the search did not return it
    assert "c6" not in ids  # a chunk the caller's groups do not admit never reaches the answer
    assert store.lookups == [["c5", "c6", "c404"]] and len(retriever.queries) == 2  # + a search within d5
    # from the answer's text alone (the OpenAI-compatible route) nothing is looked up and no document searched
    store.lookups.clear()
    retriever.queries.clear()
    await collect(pipeline(retriever, FakeLLM(["x"]), rewrite_with_llm=False, chunk_store=store),
                  "when is the fix coming?", [{"role": "assistant", "content": "From *Known Issues › Locks*: ..."}])
    assert store.lookups == [] and len(retriever.queries) == 1


@pytest.mark.asyncio
async def test_cancellation_closes_llm_stream() -> None:
    llm = FakeLLM(["a ", "b ", "c "] * 50)
    gen = pipeline(FakeRetriever([GOOD]), llm).run(QUESTION, flt=SearchFilter(tenant_id="t"), history=[],
                                                   request_id="r", conversation_id="c", message_id="m", top_k=5)
    async for e in gen:
        if isinstance(e, Token):
            break
    await gen.aclose()
    assert llm.closed == 1


@pytest.mark.asyncio
async def test_an_initialism_is_answered_from_the_passage_that_spells_it_out() -> None:
    costs = RankedChunk(
        chunk=ChunkRecord(id="s1", tenant_id="t", document_id="ship", document_version=1, title="Shipping Policy",
                          text="| Option | Cost |\n|---|---|\n| Canada Standard | 9.95 Canadian dollars |\n"
                               "| United Kingdom Standard | 6.95 pounds |",
                          section_path=("Shipping options and costs",)),
        score=0.03, scores={"keyword": 9.0, "vector": 0.7}, ranks={"keyword": 1, "vector": 1},
    )
    events = await collect(pipeline(FakeRetriever([costs]), ExtractiveBackend()),  # type: ignore[arg-type]
                           "How much is shipping to the UK?")
    done = events[-1]
    assert done.outcome == "answered" and "6.95 pounds" in done.answer and "Canada" not in done.answer
