"""The answer pipeline: rewrite -> retrieve -> answerability -> prompt -> stream (breaker, fallback) -> citations.

Event order: ``meta``, (``degraded``), ``sources``, ``token``..., (``degraded`` llm_fallback before fallback tokens),
``citations``, ``done``. An error yields ``error`` then ``done``; ``done`` is always last.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

from app.generation import answerability
from app.generation.backends.base import LLMBackend
from app.generation.backends.extractive import ExtractiveBackend
from app.generation.citations import CitationStream, check_support
from app.generation.events import Citations, Degraded, Done, Error, Event, Meta, Sources, Token
from app.generation.prompt import PROMPT_TEMPLATE_VERSION, REFUSAL_TEXT, Prompt, build_prompt, source_dict
from app.generation.resilience import CircuitBreaker, guarded_stream
from app.generation.rewrite import rewrite_query
from app.generation.units import AnswerUnit, rank_units, unit_first
from core.errors import AppError, ErrorCode
from core.settings import GenerationSettings
from core.types import RankedChunk, SearchFilter
from retrieval.protocols import Embedder, Retriever

log = logging.getLogger(__name__)


async def aclose(it: AsyncIterator[Any]) -> None:
    """Close an async iterator that may be an async generator (stops the work behind it now, not at GC)."""
    close = getattr(it, "aclose", None)
    if close is not None:
        await close()

REFUSAL_SOURCES = 3


def _nearest(units: list[AnswerUnit], k: int) -> list[RankedChunk]:
    """The best chunk of each of the ``k`` best units: the sections to look at when the answer is not found."""
    return [max(u.chunks, key=lambda rc: rc.score) for u in units[:k]]


def refusal_text(units: list[AnswerUnit]) -> str:
    """The not-found answer, naming the nearest sections so the agent knows where to look."""
    if not units:
        return REFUSAL_TEXT
    near = "; ".join(f"*{u.label}*" for u in units)
    return f"{REFUSAL_TEXT} The nearest sections are: {near}."


class AnswerPipeline:
    def __init__(
        self,
        retriever: Retriever,
        llm: LLMBackend,
        fallback: ExtractiveBackend,
        embedder: Embedder | None,
        settings: GenerationSettings,
        versions: dict[str, str],
        *,
        breaker: CircuitBreaker | None = None,
        retries: int = 1,
        rewrite_with_llm: bool = True,
    ) -> None:
        self.retriever = retriever
        self.llm = llm
        self.fallback = fallback
        self.embedder = embedder
        self.settings = settings
        self.versions = {**versions, "prompt_template": PROMPT_TEMPLATE_VERSION, "model": llm.model}
        self.breaker = breaker or CircuitBreaker()
        self.retries = retries
        self.rewrite_with_llm = rewrite_with_llm and llm.name != "extractive"

    async def run(
        self,
        question: str,
        *,
        flt: SearchFilter,
        history: list[dict[str, str]],
        request_id: str,
        conversation_id: str,
        message_id: str,
        top_k: int,
    ) -> AsyncGenerator[Event, None]:
        t0 = time.perf_counter()
        timings: dict[str, float] = {}
        state: dict[str, Any] = {
            "answer": "", "prompt_tokens": 0, "refused": False, "degraded": False,
            "retrieval_timings_ms": {}, "retrieval_degraded": [], "outcome": "not_found", "missing": [],
            "unit": None, "mode": "excerpt",
        }

        def mark(name: str) -> None:
            timings[name] = round((time.perf_counter() - t0) * 1000, 2)

        yield Meta(request_id, conversation_id, message_id, dict(self.versions))
        try:
            async with aclosing(self._answer(question, flt, history, top_k, state, mark)) as events:
                async for event in events:
                    yield event
        except AppError as exc:
            if exc.code is ErrorCode.INDEX_UNAVAILABLE and not state["retrieval_timings_ms"]:  # retrieval failed
                state["retrieval_degraded"] = [str(s) for s in exc.details.get("degraded", ())]  # every retriever
            yield Error(exc.code.value, exc.message)
        except Exception as exc:  # noqa: BLE001 - the stream must end with error + done, not a broken connection
            log.exception("answer pipeline failed")
            yield Error(ErrorCode.INTERNAL.value, f"internal error: {type(exc).__name__}")
        mark("total")
        completion = await asyncio.to_thread(self.llm.count_tokens, state["answer"]) if state["answer"] else 0
        yield Done(
            usage={"prompt_tokens": state["prompt_tokens"], "completion_tokens": completion},
            timings_ms=timings, refused=state["refused"], degraded=state["degraded"], answer=state["answer"],
            retrieval_timings_ms=state["retrieval_timings_ms"], retrieval_degraded=state["retrieval_degraded"],
            outcome=state["outcome"], missing=state["missing"], unit=state["unit"], mode=state["mode"],
        )

    async def _answer(self, question, flt, history, top_k, state, mark) -> AsyncGenerator[Event, None]:  # type: ignore[no-untyped-def]
        use_llm = self.rewrite_with_llm and self.breaker.state.value == "closed"
        query = await rewrite_query(
            question, history, llm=self.llm if use_llm else None, count_tokens=self.fallback.count_tokens,
        )
        mark("rewrite")
        result = await self.retriever.retrieve(query, flt, top_k)
        mark("retrieve")
        state["retrieval_timings_ms"] = {k: round(ms, 2) for k, ms in result.timings_ms.items()}
        state["retrieval_degraded"] = list(result.degraded)
        if result.degraded:
            state["degraded"] = True
            yield Degraded(list(result.degraded))

        units = rank_units(query, result.chunks, embedder=self.embedder)
        verdict = answerability.assess(query, result.chunks, units[0] if units else None)
        state["outcome"], state["missing"] = verdict.outcome, list(verdict.missing)
        if verdict.outcome == answerability.NOT_FOUND:
            state["refused"] = True
            nearest = _nearest(units, REFUSAL_SOURCES)
            yield Sources([source_dict(n, rc) for n, rc in enumerate(nearest, start=1)])
            mark("sources")
            state["answer"] = refusal_text(units[:REFUSAL_SOURCES])
            yield Token(state["answer"])
            yield Citations([])
            return

        open_breaker = self.breaker.state.value == "open" and self.llm is not self.fallback
        llm = self.fallback if open_breaker else self.llm
        unit = units[0]
        ordered = unit_first(unit, result.chunks)
        prompt = await asyncio.to_thread(self._prompt, llm, query, ordered, history)
        state["prompt_tokens"] = prompt.prompt_tokens
        sources = prompt.source_dicts()
        state["unit"] = {
            "label": unit.label, "document_id": unit.document_id, "section_path": list(unit.section_path),
            "sources": [s["n"] for s in sources if s["chunk_id"] in {rc.chunk.id for rc in unit.chunks}],
        }
        state["mode"] = "excerpt" if llm.name == "extractive" else "generated"
        yield Sources(sources)
        mark("sources")

        cites = CitationStream(range(1, len(sources) + 1))
        async with aclosing(self._generate(open_breaker, prompt, state)) as pieces:
            async for piece in pieces:
                if isinstance(piece, Degraded):
                    yield piece
                    continue
                text = cites.feed(piece)
                if text:
                    if "first_token" not in state:
                        state["first_token"] = True
                        mark("first_token")
                    state["answer"] += text
                    yield Token(text)
        tail = cites.flush()
        if state["missing"] and not state["answer"].strip().startswith(REFUSAL_TEXT):
            tail += "\n\n" + answerability.missing_text(state["missing"])
        if tail:
            state["answer"] += tail
            yield Token(tail)
        if state["answer"].strip().startswith(REFUSAL_TEXT):
            state["refused"] = True  # the model found no answer in the passages
            state["outcome"] = answerability.NOT_FOUND
        citations = await asyncio.to_thread(check_support, state["answer"], sources, self.embedder)
        mark("citations")
        yield Citations(citations)

    def _prompt(self, llm: LLMBackend, query: str, chunks: list, history: list[dict[str, str]]) -> Prompt:  # type: ignore[type-arg]
        return build_prompt(
            query, chunks, count_tokens=llm.count_tokens,
            context_window=min(self.settings.context_window, llm.context_window),
            max_new_tokens=self.settings.max_new_tokens, history=history,
        )

    async def _generate(self, skip_llm: bool, prompt: Prompt, state: dict[str, Any]) -> AsyncGenerator[Any, None]:
        """Pieces from the LLM through the breaker; before the first piece, failure or a first-token timeout
        switches to the extractive fallback (a Degraded event is yielded first)."""
        max_tokens, temperature = self.settings.max_new_tokens, self.settings.temperature
        llm = self.llm
        if not skip_llm:
            stream = guarded_stream(
                lambda: llm.stream(prompt.messages, max_tokens=max_tokens, stop=None, temperature=temperature),
                self.breaker,
                retries=self.retries,
            )
            try:
                first = await asyncio.wait_for(anext(stream), self.settings.first_token_timeout_s)
            except StopAsyncIteration:
                return
            except (AppError, TimeoutError) as exc:
                log.warning("LLM unavailable, extractive fallback: %r", exc)
                if isinstance(exc, TimeoutError):
                    self.breaker.record_failure()
                await aclose(stream)
                if llm is self.fallback:
                    raise
            else:
                try:
                    yield first
                    async for piece in stream:
                        yield piece
                finally:
                    await aclose(stream)
                return
        state["degraded"] = True
        state["mode"] = "excerpt"  # the extractive composer answers instead of the model
        yield Degraded(["llm_fallback"])
        fallback = self.fallback.stream(prompt.messages, max_tokens=max_tokens, stop=None, temperature=temperature)
        try:
            async for piece in fallback:
                yield piece
        finally:
            await aclose(fallback)
