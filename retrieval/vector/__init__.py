"""Embedded dense (vector) index."""

from retrieval.vector.embedded import EmbeddedVectorIndex

__all__ = ["EmbeddedVectorIndex"]
