"""Embedded keyword (BM25) index on tantivy."""

from retrieval.keyword.tantivy_index import TantivyKeywordIndex

__all__ = ["TantivyKeywordIndex"]
