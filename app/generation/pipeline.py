"""The answer pipeline: rewrite -> retrieve -> answerability -> prompt -> stream (breaker, fallback) -> citations.

Event order: ``meta``, (``degraded``), ``sources``, ``token``..., (``degraded`` llm_fallback before fallback tokens),
``citations``, ``done``. An error yields ``error`` then ``done``; ``done`` is always last.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Any

from app.generation import answerability
from app.generation.backends.base import LLMBackend
from app.generation.backends.extractive import ExtractiveBackend
from app.generation.citations import CitationStream, check_support
from app.generation.events import Citations, Degraded, Done, Error, Event, Meta, Sources, Token
from app.generation.prompt import PROMPT_TEMPLATE_VERSION, REFUSAL_TEXT, Prompt, build_prompt, source_dict
from app.generation.resilience import CircuitBreaker, guarded_stream
from app.generation.rewrite import asked_words, rewrite_query
from app.generation.text import spell_out_initialisms
from app.generation.units import (
    AnswerUnit,
    Context,
    alternative,
    conversation_context,
    prompt_parts,
    rank_units,
    unit_first,
)
from core.errors import AppError, ErrorCode
from core.settings import GenerationSettings
from core.types import RankedChunk, SearchFilter
from retrieval.protocols import ChunkStore, Embedder, Retriever

log = logging.getLogger(__name__)


async def aclose(it: AsyncIterator[Any]) -> None:
    """Close an async iterator that may be an async generator (stops the work behind it now, not at GC)."""
    close = getattr(it, "aclose", None)
    if close is not None:
        await close()

REFUSAL_SOURCES = 3
#: In a conversation whose previous answer came from a known document, that section (its chunks, by id) and the best
#: chunks for the question within that document (at most this many) join the candidates, after the main results: a
#: follow-up ("when is the fix coming?", "what if I need help?") shares few words with the section being discussed,
#: and other documents' sections of the same name crowd it out of the main results. 0 turns this off.
CONTEXT_CHUNKS = 4


@dataclass
class Timings:
    """Milliseconds since the request started, per stage (``rewrite``, ``retrieve``, ``sources``, ``first_token``,
    ``citations``, ``total``)."""

    t0: float = field(default_factory=time.perf_counter)
    ms: dict[str, float] = field(default_factory=dict)

    def mark(self, name: str) -> None:
        self.ms[name] = round((time.perf_counter() - self.t0) * 1000, 2)


@dataclass
class AnswerState:
    """What one answer has accumulated so far; :meth:`done` turns it into the final event."""

    answer: str = ""
    prompt_tokens: int = 0
    refused: bool = False
    degraded: bool = False
    retrieval_timings_ms: dict[str, float] = field(default_factory=dict)
    retrieval_degraded: list[str] = field(default_factory=list)
    outcome: str = answerability.NOT_FOUND
    missing: list[str] = field(default_factory=list)
    unlinked: list[str] = field(default_factory=list)
    unit: dict[str, Any] | None = None
    mode: str = "excerpt"
    first_token: bool = False
    timings: Timings = field(default_factory=Timings)

    def done(self, *, completion_tokens: int) -> Done:
        return Done(
            usage={"prompt_tokens": self.prompt_tokens, "completion_tokens": completion_tokens},
            timings_ms=self.timings.ms, refused=self.refused, degraded=self.degraded, answer=self.answer,
            retrieval_timings_ms=self.retrieval_timings_ms, retrieval_degraded=self.retrieval_degraded,
            outcome=self.outcome, missing=self.missing, unit=self.unit, mode=self.mode, unlinked=self.unlinked,
        )


@dataclass(frozen=True)
class Assessment:
    """The retrieve-and-decide step's result: the query searched, what came back, the ranked answering units and
    the answerability verdict."""

    query: str
    chunks: list[RankedChunk]
    units: list[AnswerUnit]
    verdict: answerability.Verdict
    degraded: tuple[str, ...]


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
        chunk_store: ChunkStore | None = None,
    ) -> None:
        self.retriever = retriever
        self.chunk_store = chunk_store
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
        history: list[dict[str, Any]],
        request_id: str,
        conversation_id: str | None,
        message_id: str | None,
        top_k: int,
    ) -> AsyncGenerator[Event, None]:
        st = AnswerState()
        yield Meta(request_id, conversation_id or "", message_id or "", dict(self.versions))
        try:
            async with aclosing(self._answer(question, flt, history, top_k, st)) as events:
                async for event in events:
                    yield event
        except AppError as exc:
            if exc.code is ErrorCode.INDEX_UNAVAILABLE and not st.retrieval_timings_ms:  # retrieval failed
                st.retrieval_degraded = [str(s) for s in exc.details.get("degraded", ())]  # every retriever
            yield Error(exc.code.value, exc.message)
        except Exception as exc:  # noqa: BLE001 - the stream must end with error + done, not a broken connection
            log.exception("answer pipeline failed")
            yield Error(ErrorCode.INTERNAL.value, f"internal error: {type(exc).__name__}")
        st.timings.mark("total")
        completion = await asyncio.to_thread(self.llm.count_tokens, st.answer) if st.answer else 0
        yield st.done(completion_tokens=completion)

    async def _answer(
        self, question: str, flt: SearchFilter, history: list[dict[str, Any]], top_k: int, st: AnswerState
    ) -> AsyncGenerator[Event, None]:
        decision = await self._retrieve_and_decide(question, flt, history, top_k, st)
        if decision.degraded:
            yield Degraded(list(decision.degraded))
        if decision.verdict.outcome == answerability.NOT_FOUND:
            for event in self._refuse(decision.units, st):
                yield event
            return

        open_breaker = self.breaker.state.value == "open" and self.llm is not self.fallback
        llm = self.fallback if open_breaker else self.llm
        unit = decision.units[0]
        runner_up = alternative(decision.units)
        ordered = unit_first(unit, decision.chunks, runner_up)
        prompt = await asyncio.to_thread(
            self._prompt, llm, decision.query, ordered, history, prompt_parts(unit, runner_up)
        )
        st.prompt_tokens = prompt.prompt_tokens
        sources = prompt.source_dicts()
        st.unit = {
            "label": unit.label, "document_id": unit.document_id, "section_path": list(unit.section_path),
            "sources": [s["n"] for s in sources if s["chunk_id"] in {rc.chunk.id for rc in unit.chunks}],
            "chunk_ids": [rc.chunk.id for rc in unit.chunks],
        }
        st.mode = "excerpt" if llm.name == "extractive" else "generated"
        yield Sources(sources)
        st.timings.mark("sources")

        async with aclosing(self._stream_answer(open_breaker, prompt, len(sources), st)) as events:
            async for event in events:
                yield event
        yield Citations(await self._cite(sources, st))

    async def _retrieve_and_decide(
        self, question: str, flt: SearchFilter, history: list[dict[str, Any]], top_k: int, st: AnswerState
    ) -> Assessment:
        """Rewrite the question (follow-ups), retrieve, rank the answering units and decide answerability."""
        use_llm = self.rewrite_with_llm and self.breaker.state.value == "closed"
        query = await rewrite_query(
            question, history, llm=self.llm if use_llm else None, count_tokens=self.fallback.count_tokens,
        )
        st.timings.mark("rewrite")
        result = await self.retriever.retrieve(query, flt, top_k)
        st.timings.mark("retrieve")
        st.retrieval_timings_ms = {k: round(ms, 2) for k, ms in result.timings_ms.items()}
        st.retrieval_degraded = list(result.degraded)
        st.degraded = st.degraded or bool(result.degraded)
        context = conversation_context(history)
        chunks = list(result.chunks)
        if chunks:
            chunks += await self._context_chunks(query, flt, context, {rc.chunk.id for rc in chunks})
        asked, follow_up = asked_words(query, question), query != question
        query = spell_out_initialisms(query, [rc.chunk.text for rc in chunks])  # "UK" -> "UK [United Kingdom]"
        units = rank_units(query, chunks, embedder=self.embedder, context=context)
        units, verdict = answerability.assess_units(query, chunks, units, asked, follow_up=follow_up)
        st.outcome, st.missing = verdict.outcome, [*verdict.missing, *verdict.unlinked]
        st.unlinked = list(verdict.unlinked)
        return Assessment(query, chunks, units, verdict, tuple(result.degraded))

    async def _context_chunks(
        self, query: str, flt: SearchFilter, context: Context, seen: set[str]
    ) -> list[RankedChunk]:
        """The section the previous answer came from (its chunks, from the chunk store) and the best chunks for
        ``query`` within its document, other than ``seen``. The caller's filter applies to both: tenant, groups, and
        any documents it names (a chunk it does not admit, or one deleted since, is left out)."""
        docs = tuple(d for d in context.document_ids() if not flt.document_ids or d in flt.document_ids)
        if not docs or not CONTEXT_CHUNKS:
            return []
        out: list[RankedChunk] = []
        ids = [c for c in context.chunk_ids if c not in seen]
        try:
            if ids and self.chunk_store is not None:
                records = await asyncio.to_thread(self.chunk_store.get_many, ids)
                out += [RankedChunk(chunk=r, score=0.0, scores={}) for c in ids
                        if (r := records.get(c)) is not None and r.document_id in docs and flt.admits(r)]
            extra = await self.retriever.retrieve(query, replace(flt, document_ids=docs), CONTEXT_CHUNKS)
        except AppError as exc:  # the main search answered; the context is a help, not a need
            log.warning("context search failed: %s", exc.message)
            return out
        seen = seen | {rc.chunk.id for rc in out}
        return out + [rc for rc in extra.chunks if rc.chunk.id not in seen]

    def _refuse(self, units: list[AnswerUnit], st: AnswerState) -> Iterator[Event]:
        """Not found: the nearest sections as sources and an answer that names them; no citations."""
        st.refused = True
        nearest = _nearest(units, REFUSAL_SOURCES)
        yield Sources([source_dict(n, rc) for n, rc in enumerate(nearest, start=1)])
        st.timings.mark("sources")
        st.answer = refusal_text(units[:REFUSAL_SOURCES])
        yield Token(st.answer)
        yield Citations([])

    async def _stream_answer(
        self, skip_llm: bool, prompt: Prompt, n_sources: int, st: AnswerState
    ) -> AsyncGenerator[Event, None]:
        """Tokens with only valid citation markers, then the "not in the documents" tail of a partial answer."""
        cites = CitationStream(range(1, n_sources + 1))
        async with aclosing(self._generate(skip_llm, prompt, st)) as pieces:
            async for piece in pieces:
                if isinstance(piece, Degraded):
                    yield piece
                    continue
                text = cites.feed(piece)
                if text:
                    if not st.first_token:
                        st.first_token = True
                        st.timings.mark("first_token")
                    st.answer += text
                    yield Token(text)
        tail = cites.flush()
        if st.missing and not st.answer.strip().startswith(REFUSAL_TEXT):
            tail += "\n\n" + answerability.missing_text(st.missing, st.unlinked)
        if tail:
            st.answer += tail
            yield Token(tail)
        if st.answer.strip().startswith(REFUSAL_TEXT):
            st.refused = True  # the model found no answer in the passages
            st.outcome = answerability.NOT_FOUND

    async def _cite(self, sources: list[dict[str, Any]], st: AnswerState) -> list[dict[str, Any]]:
        citations = await asyncio.to_thread(check_support, st.answer, sources, self.embedder)
        st.timings.mark("citations")
        return citations

    def _prompt(
        self, llm: LLMBackend, query: str, chunks: list[RankedChunk], history: list[dict[str, Any]],
        parts: dict[str, str] | None = None,
    ) -> Prompt:
        return build_prompt(
            query, chunks, count_tokens=llm.count_tokens,
            context_window=min(self.settings.context_window, llm.context_window),
            max_new_tokens=self.settings.max_new_tokens, history=history, parts=parts,
        )

    async def _generate(self, skip_llm: bool, prompt: Prompt, st: AnswerState) -> AsyncGenerator[str | Degraded, None]:
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
        st.degraded = True
        st.mode = "excerpt"  # the extractive composer answers instead of the model
        yield Degraded(["llm_fallback"])
        fallback = self.fallback.stream(prompt.messages, max_tokens=max_tokens, stop=None, temperature=temperature)
        try:
            async for piece in fallback:
                yield piece
        finally:
            await aclose(fallback)
