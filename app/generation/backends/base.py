"""The LLM backend protocol. Streaming is the only primitive; a non-streaming call is the join of the stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable


@runtime_checkable
class LLMBackend(Protocol):
    """A chat model that streams text.

    - ``stream(messages, max_tokens=, stop=, temperature=)`` yields text pieces (any granularity, possibly splitting
      words or ``[n]`` markers) and stops at ``max_tokens`` new tokens or at a ``stop`` string (not included).
      ``messages`` are OpenAI-style ``{"role": "system"|"user"|"assistant", "content": str}``.
    - Cancelling the consuming task, or closing the iterator (``aclose()``), stops generation and frees the
      connection / thread.
    - Failures before the first piece raise ``AppError(ErrorCode.DEPENDENCY_UNAVAILABLE)``; the caller may retry or
      fall back. A failure after the first piece also raises ``AppError``; it is never retried (text was shown).
    - ``count_tokens(text)`` counts with the model's own tokenizer where the backend can reach it (synchronous: call it
      off the event loop when it does I/O); ``tokenizer_source`` says which tokenizer was used.
    - ``context_window`` is the model's total token budget (prompt + new tokens).
    """

    name: str
    model: str
    context_window: int
    tokenizer_source: str

    def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncIterator[str]: ...

    def count_tokens(self, text: str) -> int: ...


async def complete(
    llm: LLMBackend,
    messages: list[dict[str, str]],
    *,
    max_tokens: int,
    stop: list[str] | None = None,
    temperature: float = 0.0,
) -> str:
    """Non-streaming call: the join of ``stream``."""
    parts = [p async for p in llm.stream(messages, max_tokens=max_tokens, stop=stop, temperature=temperature)]
    return "".join(parts)
