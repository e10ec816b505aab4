"""The answering unit: the one document section that answers, chosen before anything is composed.

Retrieval returns chunks from several documents and sections. An answer stitched from the best sentences across all of
them mixes a spec line with a setup step; a support agent needs the section that answers, whole. So the retrieved
chunks are grouped by (document, section) and each group is scored as one candidate unit:

- ``rank``: the retriever's opinion, ``1 / (1 + r)`` for the best fused rank ``r`` (0-based) among the group's chunks;
- ``coverage``: idf-weighted share of the question's content terms found in the group (section path, title and text;
  idf over the retrieved groups, so a term every group has counts little);
- ``heading``: the same share over the section path alone (a question about "offline" devices and a section called
  "A device shows as offline");
- ``vector``: the best dense cosine among the group's chunks, when the vector retriever ran;
- ``pinned``: the share of the codes and years the question names ("E38", "2025") that the group contains.

The unit's chunks are kept in document order. The prompt lists the unit first (``passage 1..k``), then the other
chunks by rank, so the extractive composer and an LLM both see the answering section first.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from app.generation.answerability import constraint_terms
from app.generation.text import content_terms, has_term
from core.types import RankedChunk

#: Weights of the unit score (fitted on the doc2dial dev domains and the demo support set; see
#: ``benchmarks/answer_quality.py``).
W_RANK, W_COVERAGE, W_HEADING, W_VECTOR, W_PINNED = 0.5, 2.0, 0.5, 1.0, 1.0


@dataclass(frozen=True, slots=True)
class AnswerUnit:
    """Retrieved chunks of one section of one document, in document order."""

    chunks: tuple[RankedChunk, ...]
    score: float
    features: dict[str, float]

    @property
    def document_id(self) -> str:
        return self.chunks[0].chunk.document_id

    @property
    def title(self) -> str:
        return self.chunks[0].chunk.title

    @property
    def section_path(self) -> tuple[str, ...]:
        return self.chunks[0].chunk.section_path

    @property
    def label(self) -> str:
        return unit_label(self.title, " > ".join(self.section_path))

    @property
    def text(self) -> str:
        return "\n\n".join(rc.chunk.text for rc in self.chunks)


def unit_label(title: str, section: str) -> str:
    """"Troubleshooting Guide › A device shows as offline" from a title and a " > " section path (a first path part
    equal to the title is not repeated; the title alone when there is no section)."""
    path = [p.strip() for p in section.split(" > ") if p.strip()] if section else []
    if path and path[0].lower() == title.strip().lower():
        path = path[1:]
    return " › ".join([title.strip(), *path]) if path else title.strip()


def _key(rc: RankedChunk) -> tuple[str, tuple[str, ...]]:
    return rc.chunk.document_id, rc.chunk.section_path


def group_sections(chunks: Sequence[RankedChunk]) -> list[list[tuple[int, RankedChunk]]]:
    """Chunks grouped by (document, section), groups in order of their best chunk's rank; (rank, chunk) pairs."""
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[int, RankedChunk]]] = {}
    for rank, rc in enumerate(chunks):
        groups.setdefault(_key(rc), []).append((rank, rc))
    return list(groups.values())


def rank_units(question: str, chunks: Sequence[RankedChunk]) -> list[AnswerUnit]:
    """Candidate answering units, best first (empty when there are no chunks)."""
    groups = group_sections(chunks)
    if not groups:
        return []
    q_terms = set(content_terms(question))
    pinned = constraint_terms(question, names=False)
    group_terms: list[set[str]] = [
        set().union(*(content_terms(f"{rc.chunk.title} {rc.chunk.section} {rc.chunk.text}") for _, rc in g))
        for g in groups
    ]
    df = Counter(t for terms in group_terms for t in terms & q_terms)
    n = len(groups)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
    norm = sum(idf.values()) or 1.0
    units = []
    for g, terms in zip(groups, group_terms, strict=True):
        heading = set(content_terms(" ".join(g[0][1].chunk.section_path)))
        vectors = [rc.scores["vector"] for _, rc in g if "vector" in rc.scores]
        f = {
            "rank": 1.0 / (1 + min(r for r, _ in g)),
            "coverage": sum(idf[t] for t in q_terms & terms) / norm,
            "heading": sum(idf[t] for t in q_terms & heading) / norm,
            "vector": max(vectors) if vectors else 0.0,
            "pinned": sum(any(has_term(t, rc.chunk.text) for _, rc in g) for t in pinned) / (len(pinned) or 1),
        }
        score = (W_RANK * f["rank"] + W_COVERAGE * f["coverage"] + W_HEADING * f["heading"] + W_VECTOR * f["vector"]
                 + W_PINNED * f["pinned"])
        ordered = tuple(rc for _, rc in sorted(g, key=lambda p: (p[1].chunk.order, p[0])))
        units.append(AnswerUnit(ordered, round(score, 4), f))
    units.sort(key=lambda u: -u.score)
    return units


def unit_first(unit: AnswerUnit, chunks: Sequence[RankedChunk]) -> list[RankedChunk]:
    """``chunks`` reordered for the prompt: the unit's chunks (document order), then the rest by rank."""
    ids = {rc.chunk.id for rc in unit.chunks}
    return [*unit.chunks, *(rc for rc in chunks if rc.chunk.id not in ids)]
