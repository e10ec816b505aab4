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
- ``pinned``: the share of the codes and years the question names ("E38", "2025") that the group contains;
- ``keyed``: the share of the codes the question names ("E19", "KC-200") that the group defines: a table row whose
  first cell is the code, a line that starts with it, or a heading that names it. "camera says E19" is answered by the
  error-code table's E19 row, not by a release note that mentions E19 in passing;
- ``quotes``: the share of the texts the question quotes (:func:`quoted_literals`: in quotation marks, or words in
  capitals copied from a statement or a screen, "this KESTREL PROTECT charge") that the group holds word for word;
- ``compares``: 1 when a question that compares two things ("the difference between Protect Plus and Protect
  Premium", :func:`app.generation.text.compared`) meets a section with a table that names both (a column or a row for
  each): the plan table, not the page on one of the plans;
- ``phrase``: the share of the question's phrases (pairs of adjacent content terms: "bank statement", "Kestrel
  Protect") that stand side by side in the group (section path, title and text); ``heading_phrase``: the same in the
  section path alone. A section that names what the question names, in its words and their order, beats one that only
  shares the words;
- ``shape``: 1 when a how-to question meets a section with a list of steps;
- ``form``: 1 when a question whose answer has a form (``text.expected_answer``: "how much" a number or amount,
  "when" a date or time limit, "how long" a duration) meets a section with a sentence, list item or table row on its
  words that has one: "How much is shipping to Canada?" is answered by the table of costs, not by "We ship to ...
  Canada";
- ``context``: in a conversation, 1 when the unit is the section the previous answer came from, 0.5 when it is
  another section of that document: a follow-up ("when is the fix coming?") stays on the page being discussed (the
  pipeline adds that section and the best chunks of its document to the candidates);
- with an embedder, ``label`` (question vs "title › section") and ``sentence`` (question vs the section's best
  sentence): late interaction over a few short texts per question (about 15; 0.2-0.4 s on 2 busy cores).

The unit's chunks are kept in document order. The prompt lists the unit first (``passage 1..k``), then the other
chunks by rank, so the extractive composer and an LLM both see the answering section first.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from app.generation.answerability import constraint_terms
from app.generation.compose import SOURCE_LABEL, blocks, intent
from app.generation.text import (
    _BULLET,
    compared,
    comparison_rows,
    content_terms,
    expected_answer,
    has_term,
    split_sentences,
    strip_breadcrumb,
    strip_markers,
    table_cells,
)
from core.types import RankedChunk
from retrieval.embedders import embed_now
from retrieval.protocols import Embedder

#: Weights of the unit score, fitted with ``benchmarks/unit_choice.py fit`` on half A (demo support set, odd ids, +
#: doc2dial VA), checked on half B (even ids + DMV), and the reverse. Fitted on A: the weights below; on B: the same
#: but vector 0, label 1, shape 0. Unit top-1 (the right section chosen) with these weights, EMBED 4 x 3:
#: half A 0.824, half B 0.753 (held out); demo 0.767, VA 0.874, DMV 0.731. Fitted on B, held-out A: 0.813-0.829.
#: Lexical weights only (rank 0.25, vector 2, no embedder): A 0.736, B 0.741; the weights before this fit (rank 0.5,
#: coverage 2, vector 1): A 0.710, B 0.707. Without an embedder the ``sentence`` and ``label`` features are 0.
#: Cost: the embedding batch moved time to sources p95 from ~0.13 s to ~0.7-0.9 s on 2 shared, busy cores
#: (answer_quality.py --limit 60); with ``sentence`` and ``label`` at 0 nothing is embedded (then use the lexical
#: weights above: rank 0.25, coverage 2, vector 2, shape 0).
#: Re-fitted after the answer-side terms were stemmed (Snowball) and plain-text headings reached doc2dial: both
#: halves' fits drop ``vector`` to 0 (held-out top-1 +0.005 / +0.011), but end to end (answer_quality.py) that trades
#: the demo set (section cited 0.779 -> 0.761, facts 0.689 -> 0.671) for doc2dial (section cited 0.809 -> 0.828,
#: share 0.723 -> 0.725): a wash, so the weights stay.
#: ``context`` (1.0; 0 before), measured end to end (answer_quality.py; the previous answer carried as a stored
#: conversation carries it) on the doc2dial dialogues (real later user turns, 156 scored) and the demo support set:
#: no context: dialogues page cited 0.481, grounding share 0.518; demo section cited 0.779, follow-ups 0.556.
#: Weight 0.5, feature only: 0.500 / 0.524; demo 0.779 / 0.556. Weight 0.5 with the section being discussed and a search
#: within its document added to the candidates (``pipeline.CONTEXT_CHUNKS``): 0.526 / 0.527; demo 0.785 / 0.593.
#: Weight 1.0 with them (shipped): 0.609 / 0.581 (VA 0.556, DMV 0.682); demo 0.785 / 0.556, facts 0.713.
#: ``phrase`` / ``heading_phrase`` (1.0 / 0.5; 0 before), with the other weights as they were, on the split halves of
#: ``unit_choice.py`` (dump of landed main, 367 answerable questions): fitted on A (demo odd ids + VA): 1.0 / 0.75,
#: held-out B 0.805 -> 0.816; fitted on B (demo even ids + DMV): 0.5 / 0.5, held-out A 0.845 -> 0.850. Unit top-1 with
#: the shipped 1.0 / 0.5: demo 0.798 -> 0.816, VA 0.865 -> 0.892, DMV 0.828 -> 0.839. End to end (answer_quality.py):
#: demo section cited 0.785 -> 0.798, facts 0.713 -> 0.730; doc2dial section cited 0.873 -> 0.882, share 0.762 -> 0.775.
#: ``form`` (0.5; 0 before), end to end: demo section cited 0.822 -> 0.828 (facts 0.761, unanswerable 0.861
#: unchanged); doc2dial 0.887 / 0.786 unchanged.
#: ``keyed`` (0.75; 0 before), end to end: demo section cited 0.834 -> 0.840, facts 0.772 -> 0.779 (unanswerable 0.861,
#: follow-ups 0.778 unchanged); doc2dial 0.887 / 0.786 and SQuAD v2 dev-half unchanged. At 1.0 "My 256 GB card kept
#: showing E19 after every restart. Is that fixed?" went to the error table instead of the release note that fixed it.
#: ``compares`` (1.0; 0 before) with the comparison answer of :func:`app.generation.compose.compose`, end to end: demo
#: facts 0.779 -> 0.789 (section cited 0.840, unanswerable 0.861, follow-ups 0.778 unchanged); doc2dial 0.887 / 0.786
#: unchanged (its pages have no table that names both sides of a question).
#: Phrasal verbs read as their compounds (:data:`app.generation.text.PHRASAL`, "set it up" ~ "setup"), weights as they
#: were: demo section cited 0.840 -> 0.847 (facts 0.789, unanswerable 0.861, follow-ups 0.778); doc2dial unchanged.
#: ``quotes`` (0.75; 0 before), end to end: demo section cited 0.847 -> 0.853, facts 0.789 -> 0.792 (unanswerable
#: 0.861, follow-ups 0.778 unchanged); doc2dial 0.887 / 0.786 and SQuAD v2 dev-half (0.91 / 0.03 / 0.255) unchanged.
#: ``shape`` counts numbered steps and bulleted sentences, no longer any bulleted line: once PDF bullets were read as
#: "•" list items (they were "(cid:127)" text), a manual's "What is in the box" list gave its opening section
#: ``shape`` and it won the offline question. Demo support set and doc2dial identical (0.853 / 0.792 / 0.861 / 0.778;
#: 0.887 / 0.786), with the how-to rule of :func:`alternative`.
WEIGHTS: dict[str, float] = {
    "rank": 0.25, "coverage": 1.0, "heading": 0.5, "vector": 1.0, "pinned": 1.0,
    "sentence": 2.0, "label": 0.0, "shape": 0.25, "context": 1.0, "phrase": 1.0, "heading_phrase": 0.5,
    "form": 0.5, "keyed": 0.75, "compares": 1.0, "quotes": 0.75,
}
#: Units whose sentences are embedded (the best by the lexical score), and sentences embedded per unit.
EMBED_UNITS, EMBED_SENTENCES = 4, 3
#: A sentence is embedded by its first words only (a run-on paragraph line costs as much as the rest together).
SENTENCE_WORDS = 40


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
    equal to the title is not repeated; the title alone when there is no section). Citation-like markers of the
    document's headings ("Register a moped[1]") are dropped: the label is quoted in answers."""
    title, section = strip_markers(title), strip_markers(section)
    path = [p.strip() for p in section.split(" > ") if p.strip()] if section else []
    if path and path[0].lower() == title.strip().lower():
        path = path[1:]
    return " › ".join([title.strip(), *path]) if path else title.strip()


@dataclass(frozen=True, slots=True)
class Context:
    """Where the conversation's previous answer came from: its sections as (document id or None, label) pairs, and the
    ids of the chunks it was composed from. Ids are known when the answer was stored with its unit (conversations);
    from the answer's text alone (the OpenAI-compatible route, whose client sends the history) only the label is:
    "From *Title › Section*:" (or "*Title › Section › Subheading*", a heading inside the section)."""

    sections: tuple[tuple[str | None, str], ...] = ()
    chunk_ids: tuple[str, ...] = ()

    def document_ids(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(doc for doc, _ in self.sections if doc))

    def scores(self, units: Sequence[tuple[str, str, str]]) -> list[float]:
        """Per (document id, title, label) of the candidate units: 1.0 for the section the previous answer came from,
        0.5 for another section of the same document, else 0. A label from the answer's text names the section, or a
        heading inside it: the candidate with the longest label it starts with is that section."""
        out = [0.0] * len(units)
        for doc, seen in self.sections:
            same = [i for i, (d, title, _) in enumerate(units)
                    if d == doc or (doc is None and seen.split(" › ")[0] == title.strip())]
            for i in same:
                out[i] = max(out[i], 0.5)
            named = [i for i in same if units[i][2] == seen or (doc is None and seen.startswith(units[i][2] + " › "))]
            if named:
                longest = max(len(units[i][2]) for i in named)
                for i in named:
                    if len(units[i][2]) == longest:
                        out[i] = 1.0
        return out


def conversation_context(history: Sequence[Mapping[str, Any]]) -> Context:
    """The previous answer's sections, from the last assistant turn of ``history``: its stored ``unit``
    ({document_id, label, chunk_ids}) when the turn carries one, else the section its text says it answers from."""
    turn = next((t for t in reversed(history) if t.get("role") == "assistant"), None)
    if turn is None:
        return Context()
    unit = turn.get("unit")
    if isinstance(unit, Mapping) and unit.get("label"):
        ids = tuple(str(c) for c in unit.get("chunk_ids") or () if c)
        return Context(((str(unit.get("document_id") or "") or None, str(unit["label"])),), ids)
    return Context(tuple((None, m.group(1).strip()) for m in SOURCE_LABEL.finditer(str(turn.get("content", "")))))


def _key(rc: RankedChunk) -> tuple[str, tuple[str, ...]]:
    return rc.chunk.document_id, rc.chunk.section_path


def group_sections(chunks: Sequence[RankedChunk]) -> list[list[tuple[int, RankedChunk]]]:
    """Chunks grouped by (document, section), groups in order of their best chunk's rank; (rank, chunk) pairs."""
    groups: dict[tuple[str, tuple[str, ...]], list[tuple[int, RankedChunk]]] = {}
    for rank, rc in enumerate(chunks):
        groups.setdefault(_key(rc), []).append((rank, rc))
    return list(groups.values())


def _sentences(text: str, section: str | None) -> list[str]:
    """The unit's sentences, list items and table rows (breadcrumb dropped), each at least three words."""
    out = []
    for line in strip_breadcrumb(text, section).splitlines():
        line = _BULLET.sub("", line.strip()).strip()
        if line.startswith("|"):
            line = " ".join(table_cells(line))
        out += [s for s in split_sentences(line) if len(s.split()) >= 3]
    return out


def rank_units(
    question: str, chunks: Sequence[RankedChunk], *, embedder: Embedder | None = None,
    weights: dict[str, float] | None = None, context: Context | None = None,
) -> list[AnswerUnit]:
    """Candidate answering units, best first (empty when there are no chunks).

    With an ``embedder`` two more features are read (late interaction, cheap: a few short texts per question):
    ``label``, the cosine between the question and the unit's "title › section" label, and ``sentence``, the best
    cosine between the question and the unit's sentences (the ``EMBED_SENTENCES`` lexically best of each of the
    ``EMBED_UNITS`` units with the best lexical score; the others get the lowest embedded value). ``shape``: 1 when a
    how-to question meets a unit with a list of steps. ``context``: where the conversation's previous answer came from
    (the ``context`` feature)."""
    w = {**WEIGHTS, **(weights or {})}
    groups = group_sections(chunks)
    if not groups:
        return []
    q_seq = content_terms(question)
    q_terms, q_pairs = set(q_seq), _pairs(q_seq)
    pinned = constraint_terms(question, names=False)
    codes = named_codes(question)
    literals = quoted_literals(question)
    sides = compared(question)
    group_seqs = [
        [content_terms(f"{rc.chunk.title}\n{rc.chunk.section}\n{rc.chunk.text}") for _, rc in g] for g in groups
    ]
    group_terms: list[set[str]] = [set().union(*seqs) for seqs in group_seqs]
    df = Counter(t for terms in group_terms for t in terms & q_terms)
    n = len(groups)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
    norm = sum(idf.values()) or 1.0
    howto = intent(question) == "howto"
    form = expected_answer(question)
    sentences = [[s for _, rc in g for s in _sentences(rc.chunk.text, rc.chunk.section or None)] for g in groups]
    feats = []
    for g, terms, seqs, sents in zip(groups, group_terms, group_seqs, sentences, strict=True):
        heading_seq = content_terms("\n".join(g[0][1].chunk.section_path))
        heading = set(heading_seq)
        pairs = set().union(*(_pairs(seq) for seq in seqs))
        vectors = [rc.scores["vector"] for _, rc in g if "vector" in rc.scores]
        lists = sum(1 for _, rc in g for ln in rc.chunk.text.splitlines() if _is_step(ln.strip()))
        feats.append({
            "rank": 1.0 / (1 + min(r for r, _ in g)),
            "coverage": sum(idf[t] for t in q_terms & terms) / norm,
            "heading": sum(idf[t] for t in q_terms & heading) / norm,
            "vector": max(vectors) if vectors else 0.0,
            "pinned": sum(any(has_term(t, rc.chunk.text) for _, rc in g) for t in pinned) / (len(pinned) or 1),
            "shape": 1.0 if howto and lists >= 2 else 0.0,
            "form": 1.0 if form is not None and _has_form(sents, form, q_terms) else 0.0,
            "compares": 1.0 if sides is not None and _compares(g, sides) else 0.0,
            "keyed": sum(any(defines(rc.chunk.text, rc.chunk.section_path, c) for _, rc in g) for c in codes)
            / (len(codes) or 1),
            "quotes": sum(any(quotes(rc.chunk.text, q) for _, rc in g) for q in literals) / (len(literals) or 1),
            "phrase": len(q_pairs & pairs) / len(q_pairs) if q_pairs else 0.0,
            "heading_phrase": len(q_pairs & _pairs(heading_seq)) / len(q_pairs) if q_pairs else 0.0,
            "context": 0.0,
            "sentence": 0.0,
            "label": 0.0,
        })
    if context is not None and context.sections:
        keys = [(c.document_id, c.title, unit_label(c.title, " > ".join(c.section_path)))
                for c in (g[0][1].chunk for g in groups)]
        for f, value in zip(feats, context.scores(keys), strict=True):
            f["context"] = value
    if embedder is not None and (w["sentence"] or w["label"]):
        _embedded(question, groups, sentences, feats, embedder, q_terms)
    units = []
    for g, f in zip(groups, feats, strict=True):
        score = sum(w.get(k, 0.0) * v for k, v in f.items())
        ordered = tuple(rc for _, rc in sorted(g, key=lambda p: (p[1].chunk.order, p[0])))
        units.append(AnswerUnit(ordered, round(score, 4), f))
    units.sort(key=lambda u: -u.score)
    return units


def _is_step(line: str) -> bool:
    """A list line of the kind a how-to question's ``shape`` looks for: a numbered item ("2) Wait"), or a bulleted one
    written as a sentence ("- Upgrading takes effect immediately."). A bulleted name or noun phrase is an inventory or
    a menu ("What is in the box": "- Quick start card"), not something to do: with it, a manual's opening section won
    "My Kestrel Cam 2 keeps going offline at night. What should I check?" over the offline checks."""
    m = _BULLET.match(line)
    return m is not None and (line[0].isdigit() or line.rstrip().endswith((".", "!", "?")))


#: A code as products and error tables write one: letters then digits, a hyphen between them or not ("E19",
#: "KC-200", "PAK-1"); not a measure ("64GB", "3pm") or an ordinal ("19th").
_NAMED_CODE = re.compile(r"\b[A-Za-z]{1,4}-?\d+(?:-[A-Za-z0-9]+)*\b")


#: Text a question quotes: in quotation marks ("it says \"Thermostat is not responding\""), or two or more words in
#: capitals in a question that is not written in capitals ("this KESTREL PROTECT charge"): copied from a screen or a
#: statement.
_QUOTED = re.compile(r"[\"“”]([^\"“”]{3,80})[\"“”]")
_CAPS_RUN = re.compile(r"\b[A-Z][A-Z0-9&'-]+(?:\s+[A-Z][A-Z0-9&'-]+)+\b")


def quoted_literals(question: str) -> list[str]:
    """What ``question`` quotes (:data:`_QUOTED`, :data:`_CAPS_RUN`): the text in quotation marks, and each run of two
    or more words in capitals (one of them at least four letters long) when most of the question's letters are lower
    case; unique, in order."""
    out = [m.group(1).strip() for m in _QUOTED.finditer(question)]
    letters = [c for c in question if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) / len(letters) < 0.5:
        out += [m.group(0) for m in _CAPS_RUN.finditer(question) if any(len(w) >= 4 for w in m.group(0).split())]
    return list(dict.fromkeys(q for q in out if q))


def quotes(text: str, literal: str) -> bool:
    """Whether ``text`` holds ``literal`` word for word: as written when it is in capitals, in any case otherwise."""
    pattern = r"\s+".join(re.escape(w) for w in literal.split())
    flags = 0 if literal.isupper() else re.IGNORECASE
    return re.search(rf"(?<!\w){pattern}(?!\w)", text, flags) is not None


def named_codes(question: str) -> list[str]:
    """The codes ``question`` names (:data:`_NAMED_CODE`), lower-cased, unique, in order."""
    return list(dict.fromkeys(m.group(0).lower() for m in _NAMED_CODE.finditer(question)))


def defines(text: str, section_path: Sequence[str], code: str) -> bool:
    """Whether a passage (``text`` under ``section_path``) defines ``code`` (lower-cased): a heading names it, or a line
    of the text starts with it (a table row's first cell, a list item, a definition "E19: ...")."""
    starts = re.compile(rf"^{re.escape(code)}\b", re.IGNORECASE)
    if any(re.search(rf"\b{re.escape(code)}\b", part, re.IGNORECASE) for part in section_path):
        return True
    for line in text.splitlines():
        line = line.strip()
        first = table_cells(line)[0] if line.startswith("|") else _BULLET.sub("", line).strip()
        if starts.match(first):
            return True
    return False


def _compares(group: list[tuple[int, RankedChunk]], sides: tuple[str, str]) -> bool:
    """Whether a table of the group's chunks names both ``sides`` (see :func:`app.generation.text.comparison_rows`)."""
    return any(blk.kind == "table" and comparison_rows(blk.lines, sides)
               for _, rc in group for blk in blocks(rc.chunk.text, rc.chunk.section))


def _has_form(sentences: list[str], form: re.Pattern[str], q_terms: set[str]) -> bool:
    """One of a unit's ``sentences`` (its sentences, list items and table rows) that shares a content term with the
    question holds an answer of the form the question expects (``form``: a date, a duration, a number)."""
    return any(form.search(s) and q_terms & set(content_terms(s)) for s in sentences)


def _pairs(terms: Sequence[str]) -> set[tuple[str, str]]:
    """Adjacent content terms: the phrases of a text ("bank statement"), stop words between them skipped."""
    return set(zip(terms, terms[1:], strict=False))


def _lexical(f: dict[str, float]) -> float:
    return WEIGHTS["rank"] * f["rank"] + WEIGHTS["coverage"] * f["coverage"] + WEIGHTS["vector"] * f["vector"]


def _embedded(
    question: str, groups: list[list[tuple[int, RankedChunk]]], sentences: list[list[str]],
    feats: list[dict[str, float]], embedder: Embedder, q_terms: set[str],
) -> None:
    """Fill the ``label`` and ``sentence`` features in ``feats`` (one batch: question, labels, sentences of the
    groups, ``sentences[i]`` those of ``groups[i]``)."""
    top = sorted(range(len(groups)), key=lambda i: -_lexical(feats[i]))[:EMBED_UNITS]
    top += [i for i, f in enumerate(feats) if f["context"] == 1.0 and i not in top]  # the section being discussed
    labels = [unit_label(groups[i][0][1].chunk.title, " > ".join(groups[i][0][1].chunk.section_path)) for i in top]
    sents: list[tuple[int, str]] = []
    for i in top:
        by_overlap = sorted(dict.fromkeys(sentences[i]), key=lambda s: -len(q_terms & set(content_terms(s))))
        cands = by_overlap[:EMBED_SENTENCES]
        sents += [(i, " ".join(s.split()[:SENTENCE_WORDS])) for s in cands]
    vecs = embed_now(embedder, [question, *labels, *(s for _, s in sents)])
    q = vecs[0]
    label_cos = vecs[1 : 1 + len(top)] @ q
    sent_cos = vecs[1 + len(top) :] @ q
    best: dict[int, float] = {}
    for (i, _), c in zip(sents, sent_cos, strict=True):
        best[i] = max(best.get(i, -1.0), float(c))
    floor_label = float(min(label_cos)) if len(top) else 0.0
    floor_sent = min(best.values()) if best else 0.0
    for i, f in enumerate(feats):
        f["label"] = float(label_cos[top.index(i)]) if i in top else floor_label
        f["sentence"] = best.get(i, floor_sent)


#: A runner-up unit scoring at least this share of the best is a close call: the answer quotes its best point too
#: ("Also, from ..."). Chosen on ``benchmarks/unit_choice.py`` dumps (right section among the quoted units, and share
#: of answers that get a second section): 0.95 -> demo 0.773 / VA 0.883 / DMV 0.817 (10-19% of answers); 0.9 ->
#: 0.791 / 0.901 / 0.860 (23-27%); 0.8 -> 0.810 / 0.910 / 0.882 (47-50%); alone (no runner-up): 0.767 / 0.874 / 0.731.
ALTERNATIVE_RATIO = 0.9


def alternative(units: Sequence[AnswerUnit], ratio: float | None = None) -> AnswerUnit | None:
    """The runner-up unit when it scores at least ``ratio`` (default ``ALTERNATIVE_RATIO``) x the best (a close
    call), else None. When the best answers a how-to question with steps (``shape``), a runner-up without steps must
    hold a sentence closer to the question than any of the best's (``sentence``): a prose instruction ("press the
    button next to the microSD slot for 10 seconds") adds a point, a manual's overview ("... with 2K video, night
    vision ...") under the offline checks does not."""
    ratio = ALTERNATIVE_RATIO if ratio is None else ratio
    if len(units) < 2 or units[0].score <= 0 or units[1].score < ratio * units[0].score:
        return None
    best, runner_up = units[0], units[1]
    if best.features.get("shape") and not runner_up.features.get("shape") and (
        runner_up.features.get("sentence", 0.0) <= best.features.get("sentence", 0.0)
    ):
        return None
    return runner_up


def unit_first(
    unit: AnswerUnit, chunks: Sequence[RankedChunk], runner_up: AnswerUnit | None = None
) -> list[RankedChunk]:
    """``chunks`` reordered for the prompt: the unit's chunks (document order), then the ``runner_up`` unit's (a
    close call, see :func:`alternative`), then the rest by rank."""
    lead = [*unit.chunks, *(runner_up.chunks if runner_up is not None else ())]
    ids = {rc.chunk.id for rc in lead}
    return [*lead, *(rc for rc in chunks if rc.chunk.id not in ids)]


def prompt_parts(unit: AnswerUnit, runner_up: AnswerUnit | None = None) -> dict[str, str]:
    """Chunk id -> the passage's ``part`` attribute in the prompt (``answer`` / ``alternative``)."""
    parts = {rc.chunk.id: "answer" for rc in unit.chunks}
    if runner_up is not None:
        parts.update({rc.chunk.id: "alternative" for rc in runner_up.chunks if rc.chunk.id not in parts})
    return parts
