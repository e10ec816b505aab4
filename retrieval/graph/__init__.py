"""Knowledge-graph retrieval: entity normalisation shared with ingestion, and the embedded networkx graph index."""

from retrieval.graph.index import NetworkXGraphIndex, QueryExtractor
from retrieval.graph.normalize import normalize_entity, query_ngrams
from retrieval.graph.ppr import PPRParams

__all__ = ["NetworkXGraphIndex", "PPRParams", "QueryExtractor", "normalize_entity", "query_ngrams"]
