"""Citation markers across token boundaries, dropping dangling ones, and the support check."""

from __future__ import annotations

import pytest

from app.generation.citations import CitationStream, check_support, cited_sentences
from tests.fakes import FakeTopicEmbedder

pytestmark = pytest.mark.unit


def run(pieces: list[str], valid: list[int]) -> str:
    c = CitationStream(valid)
    return "".join(c.feed(p) for p in pieces) + c.flush()


def test_marker_split_across_tokens_is_kept_whole() -> None:
    c = CitationStream([1])
    assert c.feed("Paris [") == "Paris "
    assert c.feed("1") == ""
    assert c.feed("]. Next") == "[1]. Next"


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        (["A [1, 2]."], "A [1, 2]."),
        (["A [1][2]."], "A [1][2]."),
        (["A [9]."], "A."),
        (["A [1, 9]."], "A [1]."),
        (["A [", "9", "][2]."], "A [2]."),
        (["x [not a marker] y"], "x [not a marker] y"),
        (["ends with ["], "ends with ["),
    ],
)
def test_markers(pieces: list[str], expected: str) -> None:
    assert run(pieces, [1, 2]) == expected


def test_dropped_numbers_are_recorded() -> None:
    c = CitationStream([1])
    c.feed("A [3] b [1].")
    assert c.dropped == [3]


def test_leading_marker_belongs_to_previous_sentence() -> None:
    assert cited_sentences("Paris is big. [1] It rains [2].") == [("Paris is big.", [1]), ("It rains [2].", [2])]


SOURCES = [
    {"n": 1, "chunk_id": "c1", "document_id": "d1", "title": "T", "section_path": ["S"], "page_start": 3,
     "page_end": 4, "text": "The embargo began in October 1973 and raised oil prices."},
]


def test_support_lexical() -> None:
    out = check_support("The embargo began in October 1973 [1]. Bananas are purple [1].", SOURCES)
    assert [c["supported"] for c in out] == [True, False]
    assert out[0]["section"] == "S" and out[0]["page_start"] == 3 and out[0]["support"]["embedding"] == 0.0


def test_support_embedding_rescues_paraphrase() -> None:
    out = check_support("Petroleum costs climbed [1].", SOURCES, FakeTopicEmbedder(("oil", "petroleum")))
    assert out[0]["supported"] is True and out[0]["support"]["embedding"] == 1.0
    out = check_support("Petroleum costs climbed [1].", SOURCES)
    assert out[0]["supported"] is False
