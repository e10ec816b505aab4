"""The contract every LLM backend must pass (``app.generation.backends.base.LLMBackend``; one suite, subclassed per
backend).

A backend's test class subclasses :class:`LLMBackendContract`, provides a ``backend`` fixture and sets
``overflow_code``: the ``ErrorCode`` a prompt longer than the context window raises before the first piece, or
``None`` for a backend that runs no model and answers any prompt. The prompt is the product's own RAG prompt
(``build_prompt``) over two short passages, so the extractive backend (which reads passages, not instructions) and the
model backends get the same input.
"""

from __future__ import annotations

from typing import Any

import pytest

from app.generation.backends import LLMBackend, complete
from app.generation.prompt import build_prompt
from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, RankedChunk

CHUNKS = [
    ChunkRecord(
        id="c1",
        tenant_id="t",
        document_id="d1",
        document_version=1,
        title="Kestrel K2 battery",
        text="The Kestrel K2 battery lasts 14 hours on a full charge. Charging the battery takes 90 minutes.",
    ),
    ChunkRecord(
        id="c2",
        tenant_id="t",
        document_id="d2",
        document_version=1,
        title="Kestrel warranty",
        text="Every Kestrel device has a two year warranty.",
    ),
]
QUESTION = "How long does the Kestrel K2 battery last on a full charge?"


def messages(llm: LLMBackend, max_new_tokens: int = 48) -> list[dict[str, str]]:
    chunks = [RankedChunk(chunk=c, score=1.0) for c in CHUNKS]
    prompt = build_prompt(
        QUESTION,
        chunks,
        count_tokens=llm.count_tokens,
        context_window=llm.context_window,
        max_new_tokens=max_new_tokens,
    )
    return prompt.messages


async def pieces(llm: LLMBackend, msgs: list[dict[str, str]], **kw: Any) -> list[str]:
    kw.setdefault("stop", None)
    kw.setdefault("temperature", 0.0)
    return [p async for p in llm.stream(msgs, **kw)]


class LLMBackendContract:
    """Subclass as ``TestXxx(LLMBackendContract)``; provide a ``backend`` fixture and ``overflow_code``."""

    overflow_code: ErrorCode | None = ErrorCode.DEPENDENCY_UNAVAILABLE

    def test_is_an_llm_backend(self, backend: LLMBackend) -> None:
        assert isinstance(backend, LLMBackend)
        assert backend.name and backend.model and backend.tokenizer_source
        assert isinstance(backend.context_window, int) and backend.context_window >= 512

    def test_count_tokens_counts(self, backend: LLMBackend) -> None:
        one, four = backend.count_tokens("battery"), backend.count_tokens("battery battery battery battery")
        assert isinstance(one, int) and 1 <= one < four
        assert backend.count_tokens("") <= 1  # a tokenizer may count a BOS token for empty text

    async def test_stream_yields_text_pieces(self, backend: LLMBackend) -> None:
        out = await pieces(backend, messages(backend), max_tokens=32)
        assert out and all(isinstance(p, str) and p for p in out)
        assert "".join(out).strip()

    async def test_complete_is_the_join_of_the_stream(self, backend: LLMBackend) -> None:
        msgs = messages(backend)
        assert await complete(backend, msgs, max_tokens=24) == "".join(await pieces(backend, msgs, max_tokens=24))

    async def test_max_tokens_is_respected(self, backend: LLMBackend) -> None:
        msgs = messages(backend)
        full = "".join(await pieces(backend, msgs, max_tokens=48))
        short = "".join(await pieces(backend, msgs, max_tokens=3))
        assert short.strip() and len(short) < len(full)
        assert backend.count_tokens(short) <= 3 + 1  # +1: re-tokenising a cut text can split differently at the edge
        assert full.startswith(short.rstrip())  # the same answer, cut earlier

    async def test_stop_string_ends_the_text_and_is_not_included(self, backend: LLMBackend) -> None:
        msgs = messages(backend)
        full = await complete(backend, msgs, max_tokens=48)
        words = full.split()
        assert len(words) >= 3, full
        stop_word = words[2]
        cut = await complete(backend, msgs, max_tokens=48, stop=[stop_word])
        assert cut == full[: full.index(stop_word)]
        assert stop_word not in cut

    async def test_closing_the_stream_early_leaves_the_backend_usable(self, backend: LLMBackend) -> None:
        msgs = messages(backend)
        stream = backend.stream(msgs, max_tokens=200, stop=None, temperature=0.0)
        assert await anext(stream)
        await stream.aclose()
        assert (await complete(backend, msgs, max_tokens=8)).strip()

    async def test_a_prompt_over_the_context_window_maps_to_an_app_error(self, backend: LLMBackend) -> None:
        huge = [{"role": "user", "content": "battery " * (backend.context_window + 200)}]
        assert backend.count_tokens(huge[0]["content"]) > backend.context_window
        if self.overflow_code is None:
            assert "".join(await pieces(backend, huge, max_tokens=16)).strip()
            return
        got: list[str] = []
        with pytest.raises(AppError) as err:
            async for piece in backend.stream(huge, max_tokens=16, stop=None, temperature=0.0):
                got.append(piece)
        assert err.value.code == self.overflow_code and got == []  # before the first piece: the caller may fall back
        assert (await complete(backend, messages(backend), max_tokens=4)).strip()  # and the backend still serves
