"""An index whose server may be down: it connects lazily and keeps retrying, so the query service starts and answers
(degraded, from the other retrievers) while, say, Weaviate is unreachable, and uses it again once it is back.

Until a connection succeeds every call raises ``AppError(INDEX_UNAVAILABLE)`` at once; a new attempt is made at most
every ``retry_s`` seconds, so a dead server costs a question one refused connection, not one timeout per call.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from core.errors import AppError, ErrorCode
from core.types import ChunkRecord, Hit, SearchFilter

log = logging.getLogger(__name__)


class ReconnectingIndex:
    """Implements the keyword and vector index protocols by delegating to ``connect()``'s index once it exists."""

    def __init__(
        self,
        connect: Callable[[], Any],
        *,
        name: str,
        dim: int,
        retry_s: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.dim = dim
        self._connect = connect
        self._retry_s = retry_s
        self._clock = clock
        self._index: Any = None
        self._last_try = -math.inf
        self._error = ""
        self._lock = threading.Lock()
        try:
            self._get()
        except AppError as exc:
            if exc.code != ErrorCode.INDEX_UNAVAILABLE:
                raise
            # logged in _get; the service starts without this index and retries

    @property
    def connected(self) -> bool:
        return self._index is not None

    def _get(self) -> Any:
        if self._index is not None:
            return self._index
        with self._lock:
            if self._index is None and self._clock() - self._last_try >= self._retry_s:
                self._last_try = self._clock()
                try:
                    self._index = self._connect()
                    log.info("%s index connected", self.name)
                except AppError as exc:
                    if exc.code != ErrorCode.INDEX_UNAVAILABLE:
                        raise  # bad configuration is not something to retry
                    self._error = exc.message
                    log.warning(
                        "%s index unavailable (retrying every %.0f s): %s", self.name, self._retry_s, exc.message
                    )
        if self._index is None:
            raise AppError(ErrorCode.INDEX_UNAVAILABLE, f"{self.name} index unavailable: {self._error}")
        return self._index

    def upsert_document(self, document_id: str, chunks: Sequence[ChunkRecord], *args: Any, **kwargs: Any) -> None:
        self._get().upsert_document(document_id, chunks, *args, **kwargs)

    def delete_document(self, document_id: str) -> None:
        self._get().delete_document(document_id)

    def search(self, query: Any, flt: SearchFilter, k: int) -> list[Hit]:
        hits: list[Hit] = self._get().search(query, flt, k)
        return hits

    def count(self, tenant_id: str | None = None) -> int:
        return int(self._get().count(tenant_id))

    def close(self) -> None:
        if self._index is not None:
            self._index.close()

    def __getattr__(self, attr: str) -> Any:
        # backend-specific extras (e.g. Weaviate's search_text / hybrid); only reached for names not defined here
        if attr.startswith("_"):
            raise AttributeError(attr)
        return getattr(self._get(), attr)
