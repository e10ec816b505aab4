"""Fakes shared by unit tests (one module, so each fake is written once)."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from app.generation.text import content_terms


class BagOfWordsEmbedder:
    """A deterministic stand-in for a sentence embedder: content terms hashed into ``dim`` buckets, L2-normalised, so
    the cosine of two texts grows with the content words they share. Records the size of each batch."""

    model_name = "bag-of-words"
    model_version = "1"

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.batches: list[int] = []

    def _vector(self, text: str) -> np.ndarray:
        v = np.zeros(self.dim, dtype=np.float32)
        for term in content_terms(text):
            v[int(hashlib.sha1(term.encode()).hexdigest(), 16) % self.dim] += 1.0
        n = float(np.linalg.norm(v))
        return v / n if n else v

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        self.batches.append(len(texts))
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, self.dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(text.split())
