"""Client for an OpenAI-compatible chat server (vLLM, llama.cpp / llama-cpp-python server): the ``vllm`` setting.

Streaming: ``POST {base_url}/chat/completions`` with ``"stream": true``; the server answers Server-Sent Events, one
``data: {json}`` line per chunk whose text is in ``choices[0].delta.content``, ending with ``data: [DONE]``.

Tokenizer, first that answers (probed once, the result is kept):

1. vLLM: ``POST {root}/tokenize`` ``{"model", "prompt"}`` -> ``{"count", "tokens", "max_model_len"}``
   (the route is at the server root, not under ``/v1``).
2. llama-cpp-python server: ``POST {root}/extras/tokenize/count`` ``{"input"}`` -> ``{"count"}``.
3. an estimate (~4 characters per token); ``tokenizer_source`` is then ``"estimate"``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from functools import lru_cache
from typing import Any

import httpx

from app.generation.text import estimate_tokens
from core.errors import AppError, ErrorCode


class OpenAICompatBackend:
    name = "vllm"

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        api_key: str = "",
        context_window: int = 4096,
        connect_timeout_s: float = 3.0,
        read_timeout_s: float = 120.0,
        first_token_timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        sync_transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.root_url = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        self.model = model
        self.context_window = context_window
        self.first_token_timeout_s = first_token_timeout_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = httpx.Timeout(read_timeout_s, connect=connect_timeout_s)
        self._transport = transport
        self._sync_transport = sync_transport
        self.tokenizer_source = "unprobed"
        self._count_cached = lru_cache(maxsize=4096)(self._count_uncached)

    # ------------------------------------------------------------------ streaming
    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncGenerator[str, None]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "stream": True,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        if stop:
            body["stop"] = stop
        client = httpx.AsyncClient(timeout=self._timeout, headers=self._headers, transport=self._transport)
        try:
            request = client.build_request("POST", f"{self.base_url}/chat/completions", json=body)
            try:
                response = await asyncio.wait_for(client.send(request, stream=True), self.first_token_timeout_s)
            except (httpx.HTTPError, OSError) as exc:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"LLM server unreachable: {exc!r}") from exc
            except TimeoutError as exc:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "LLM server: no response headers in time") from exc
            try:
                if response.status_code != 200:
                    detail = (await response.aread())[:300].decode("utf-8", "replace")
                    raise AppError(
                        ErrorCode.DEPENDENCY_UNAVAILABLE, f"LLM server answered {response.status_code}: {detail}"
                    )
                async for piece in self._pieces(response):
                    yield piece
            finally:
                await response.aclose()  # closing the response aborts generation server-side (vLLM, llama.cpp)
        finally:
            await client.aclose()

    async def _pieces(self, response: httpx.Response) -> AsyncGenerator[str, None]:
        lines = response.aiter_lines()
        first = True
        while True:
            try:
                if first:
                    line = await asyncio.wait_for(anext(lines), self.first_token_timeout_s)
                else:
                    line = await anext(lines)
            except StopAsyncIteration:
                if first:  # closed with neither text nor [DONE]: llama.cpp's server does this for a prompt too long
                    raise AppError(
                        ErrorCode.DEPENDENCY_UNAVAILABLE, "LLM stream ended before any text or [DONE]"
                    ) from None
                return
            except TimeoutError as exc:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, "LLM first-token timeout") from exc
            except (httpx.HTTPError, OSError) as exc:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"LLM stream broken: {exc!r}") from exc
            if not line.startswith("data:"):
                continue
            data = line[5:].strip()
            if data == "[DONE]":
                return
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError:
                continue
            if "error" in chunk:
                raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"LLM server error: {chunk['error']}")
            choices = chunk.get("choices") or []
            text = (choices[0].get("delta") or {}).get("content") if choices else None
            if text:
                first = False
                yield text

    async def models(self) -> list[str]:
        """Model ids served (``GET {base_url}/models``); raises ``AppError(DEPENDENCY_UNAVAILABLE)`` when down. Use it
        as a readiness probe and to check that ``model`` is served."""
        try:
            async with httpx.AsyncClient(timeout=self._timeout, headers=self._headers, transport=self._transport) as c:
                r = await c.get(f"{self.base_url}/models")
                r.raise_for_status()
                return [m["id"] for m in r.json().get("data", [])]
        except (httpx.HTTPError, OSError, ValueError, KeyError) as exc:
            raise AppError(ErrorCode.DEPENDENCY_UNAVAILABLE, f"LLM server unavailable: {exc!r}") from exc

    # ------------------------------------------------------------------ tokenizer
    def count_tokens(self, text: str) -> int:
        return self._count_cached(text)

    def _count_uncached(self, text: str) -> int:
        if self.tokenizer_source in ("unprobed", "server:/tokenize"):
            n = self._post_count(f"{self.root_url}/tokenize", {"model": self.model, "prompt": text})
            if n is not None:
                self.tokenizer_source = "server:/tokenize"
                return n
        if self.tokenizer_source in ("unprobed", "server:/extras/tokenize/count"):
            n = self._post_count(f"{self.root_url}/extras/tokenize/count", {"input": text})
            if n is not None:
                self.tokenizer_source = "server:/extras/tokenize/count"
                return n
        self.tokenizer_source = "estimate"
        return estimate_tokens(text)

    def _post_count(self, url: str, body: dict[str, Any]) -> int | None:
        try:
            with httpx.Client(timeout=httpx.Timeout(5.0, connect=1.0), transport=self._sync_transport) as c:
                r = c.post(url, json=body, headers=self._headers)
            if r.status_code != 200:
                return None
            data = r.json()
        except (httpx.HTTPError, OSError, ValueError):
            return None
        if isinstance(data.get("count"), int):
            return int(data["count"])
        if isinstance(data.get("tokens"), list):
            return len(data["tokens"])
        return None
