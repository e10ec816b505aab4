"""Backends without a model: the extractive backend, the OpenAI-compatible client against a fake HTTP transport, the
factory."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from app.generation.backends import ExtractiveBackend, OpenAICompatBackend, build_llm, complete
from app.generation.prompt import build_prompt
from core.errors import AppError, ErrorCode
from core.settings import GenerationSettings
from core.types import ChunkRecord, RankedChunk
from tests.fakes import FakeTopicEmbedder

pytestmark = pytest.mark.unit


def chunk(i: int, text: str) -> RankedChunk:
    return RankedChunk(chunk=ChunkRecord(id=f"c{i}", tenant_id="t", document_id=f"d{i}", document_version=1,
                                         title=f"Doc {i}", text=text), score=1.0)


def messages(question: str, *texts: str) -> list[dict[str, str]]:
    return build_prompt(question, [chunk(i, t) for i, t in enumerate(texts, 1)], count_tokens=len,
                        context_window=100_000, max_new_tokens=100).messages


@pytest.mark.asyncio
async def test_extractive_quotes_the_unit_it_is_given_first_with_citation() -> None:
    msgs = messages(
        "When did the oil embargo begin?",
        "Prices rose sharply. The oil embargo began in October 1973. It ended in March 1974.",
        "Cats sleep a lot. Dogs bark.",
    )
    pieces = [p async for p in ExtractiveBackend(max_sentences=1).stream(msgs, max_tokens=100, stop=None,
                                                                          temperature=0)]
    assert len(pieces) > 3  # streamed in small pieces
    assert "".join(pieces) == "From *Doc 1*:\nThe oil embargo began in October 1973 [1]."


@pytest.mark.asyncio
async def test_extractive_answers_from_the_first_section_not_the_best_sentence_anywhere() -> None:
    """The pipeline puts the answering unit first; a better-matching sentence of another section is not stitched in
    unless it makes a distinct point that nearly matches the unit's best."""
    msgs = messages(
        "When did the oil embargo begin?",
        "The embargo on oil exports started in the autumn of 1973.",
        "The oil embargo began in October 1973 and the oil embargo began the crisis.",
    )
    out = await complete(ExtractiveBackend(), msgs, max_tokens=100)
    assert out.startswith("From *Doc 1*:\nThe embargo on oil exports started in the autumn of 1973 [1].")


@pytest.mark.asyncio
async def test_extractive_respects_max_tokens_and_stop() -> None:
    msgs = messages("oil embargo", "The oil embargo began in October 1973 after the war.")
    short = await complete(ExtractiveBackend(), msgs, max_tokens=4)  # "From " and "*Doc " are two tokens each
    assert short == "From *Doc "
    stopped = await complete(ExtractiveBackend(), msgs, max_tokens=100, stop=[" in "])
    assert stopped == "From *Doc 1*:\nThe oil embargo began"


def sse(*pieces: str) -> bytes:
    lines = [
        "data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
        for p in pieces
    ]
    return ("\n\n".join([": ping", 'data: {"choices":[{"delta":{"role":"assistant"}}]}', *lines, "data: [DONE]"])
            + "\n\n").encode()


def backend(handler, **kw) -> OpenAICompatBackend:  # type: ignore[no-untyped-def]
    return OpenAICompatBackend("http://llm.test/v1", model="m", api_key="k", transport=httpx.MockTransport(handler),
                               **kw)


@pytest.mark.asyncio
async def test_openai_compat_streams_and_sends_parameters() -> None:
    seen: dict = {}

    def handler(request: httpx.Request) -> httpx.Response:
        seen["url"] = str(request.url)
        seen["auth"] = request.headers.get("authorization")
        seen["body"] = json.loads(request.content)
        return httpx.Response(200, content=sse("Hel", "lo [", "1]."), headers={"content-type": "text/event-stream"})

    llm = backend(handler)
    out = [p async for p in llm.stream([{"role": "user", "content": "hi"}], max_tokens=7, stop=["\n"],
                                       temperature=0.2)]
    assert out == ["Hel", "lo [", "1]."]
    assert seen["url"] == "http://llm.test/v1/chat/completions" and seen["auth"] == "Bearer k"
    assert seen["body"] | {} == {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                                 "max_tokens": 7, "temperature": 0.2, "stop": ["\n"]}


@pytest.mark.asyncio
async def test_openai_compat_http_error_is_dependency_unavailable() -> None:
    llm = backend(lambda r: httpx.Response(503, text="overloaded"))
    with pytest.raises(AppError) as ei:
        await complete(llm, [{"role": "user", "content": "hi"}], max_tokens=5)
    assert ei.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE and "503" in ei.value.message


@pytest.mark.asyncio
async def test_openai_compat_stream_closed_without_text_or_done_is_dependency_unavailable() -> None:
    # llama.cpp's server answers 200 and closes the stream at once when the prompt exceeds its context
    llm = backend(lambda r: httpx.Response(200, content=b"", headers={"content-type": "text/event-stream"}))
    with pytest.raises(AppError) as ei:
        await complete(llm, [{"role": "user", "content": "hi"}], max_tokens=5)
    assert ei.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE and "[DONE]" in ei.value.message
    empty = backend(lambda r: httpx.Response(200, content=sse(), headers={"content-type": "text/event-stream"}))
    assert await complete(empty, [{"role": "user", "content": "hi"}], max_tokens=5) == ""  # [DONE]: a real empty answer


@pytest.mark.asyncio
async def test_openai_compat_connection_refused() -> None:
    llm = OpenAICompatBackend("http://127.0.0.1:9/v1", model="m", connect_timeout_s=0.5)
    with pytest.raises(AppError) as ei:
        await complete(llm, [{"role": "user", "content": "hi"}], max_tokens=5)
    assert ei.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE


@pytest.mark.asyncio
async def test_openai_compat_first_token_timeout() -> None:
    class SlowStream(httpx.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[no-untyped-def]
            await asyncio.sleep(5)
            yield b"data: [DONE]\n\n"

    llm = backend(lambda r: httpx.Response(200, stream=SlowStream()), first_token_timeout_s=0.05)
    with pytest.raises(AppError, match="first-token timeout"):
        await complete(llm, [{"role": "user", "content": "hi"}], max_tokens=5)


def test_openai_compat_tokenizer_routes() -> None:
    seen: list[tuple[str, dict]] = []

    def vllm(request: httpx.Request) -> httpx.Response:
        seen.append((request.url.path, json.loads(request.content)))
        return httpx.Response(200, json={"count": 5, "max_model_len": 4096, "tokens": [1, 2, 3, 4, 5]})

    llm = OpenAICompatBackend("http://llm.test/v1", model="m", sync_transport=httpx.MockTransport(vllm))
    assert llm.count_tokens("hello world") == 5 and llm.tokenizer_source == "server:/tokenize"
    assert seen == [("/tokenize", {"model": "m", "prompt": "hello world"})]

    def llama(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/extras/tokenize/count":
            return httpx.Response(200, json={"count": len(json.loads(request.content)["input"].split())})
        return httpx.Response(404)

    llm = OpenAICompatBackend("http://llm.test/v1", model="m", sync_transport=httpx.MockTransport(llama))
    assert llm.count_tokens("a b c") == 3 and llm.tokenizer_source == "server:/extras/tokenize/count"


async def test_openai_compat_models() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"object": "list", "data": [{"id": "m", "object": "model"}]})
        return httpx.Response(404)

    assert await backend(handler).models() == ["m"]
    with pytest.raises(AppError):
        await backend(lambda r: httpx.Response(500)).models()


def test_openai_compat_tokenizer_falls_back_to_estimate_and_says_so() -> None:
    llm = OpenAICompatBackend("http://127.0.0.1:9/v1", model="m")
    assert llm.count_tokens("one two three four") >= 4
    assert llm.tokenizer_source == "estimate"


def test_factory() -> None:
    assert isinstance(build_llm(GenerationSettings()), ExtractiveBackend)
    llm = build_llm(GenerationSettings(backend="vllm", vllm_url="http://x:1/v1", model="q"))
    assert isinstance(llm, OpenAICompatBackend) and llm.root_url == "http://x:1" and llm.model == "q"
    with pytest.raises(AppError) as ei:
        build_llm(GenerationSettings(backend="local", gguf_path="/nonexistent/model.gguf"))
    assert ei.value.code in (ErrorCode.CONFIGURATION, ErrorCode.MISSING_EXTRA)


async def test_extractive_embedding_breaks_lexical_ties_and_embeds_few_sentences() -> None:
    many = " ".join(f"Filler sentence number {i}." for i in range(20))
    msgs = messages("What did the ticket cost?", "The ticket was blue. The ticket was 12 dollars. " + many)
    emb = FakeTopicEmbedder(("cost", "price", "dollar"))
    out = await complete(ExtractiveBackend(emb, max_sentences=1, embed_candidates=4), msgs, max_tokens=50)
    assert out == "From *Doc 1*:\nThe ticket was 12 dollars [1]."
    assert emb.batches[0] == 5  # the question + the 4 best lexical candidates, not all 22 sentences
