"""Extractive composition from the answering unit: what kind of answer the question wants, and that answer, cited.

- A how-to or troubleshooting question ("how do I...", "keeps going offline", "won't pair") gets the unit's steps in
  order as a numbered list: the list whose items best match the question, whole, with the sentence that introduces it.
- A fact question gets the unit's best sentence or table row (and the next one when it continues the same point).
- A "why" / "what is" question gets the unit's lead sentences.

The answer names where it comes from ("From *Troubleshooting Guide › A device shows as offline*:"). A second source is
added only when it makes a distinct point that shares content with the question (see :func:`secondary`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

from app.generation.text import (
    _BULLET,
    _MARKUP,
    _TABLE_SEP,
    ABBREVIATION,
    content_terms,
    split_sentences,
    strip_breadcrumb,
    table_sentences,
)

Intent = Literal["howto", "fact", "explain"]

_HOWTO_START = re.compile(
    r"^\s*(?:how\s+(?:do|can|should|would|to)\b|how\s+(?:i|we)\b|what\s+(?:should|do|can)\s+(?:i|we)\s+(?:do|check|try)\b"
    r"|what\s+are\s+the\s+steps\b|steps?\s+to\b|is\s+there\s+a\s+way\b|(?:please\s+)?(?:help|tell)\s+me\s+(?:how|to)\b)",
    re.IGNORECASE,
)
_HOWTO_WORDS = re.compile(
    r"\b(?:keeps?|won'?t|wont|doesn'?t|does\s+not|isn'?t|can'?t|cannot|not\s+working|stopped|fails?|failing|broken|"
    r"troubleshoot\w*|fix|reset|set\s*up|install|pair(?:ing)?|reconnect|connect|disconnect\w*|update|upgrade|cancel|"
    r"change|replace|enable|disable|turn\s+(?:on|off)|steps?|procedure)\b",
    re.IGNORECASE,
)
_FACT_START = re.compile(
    r"^\s*(?:how\s+(?:long|much|many|often|far|old|big|fast)|when|which|who|whom|whose|where|what\s+(?:is|are|was|were)"
    r"\s+the\s+\w+\s+(?:of|for|on|in)|is|are|does|do|can|will|am)\b",
    re.IGNORECASE,
)
_EXPLAIN_START = re.compile(
    r"^\s*(?:why\b|what\s+(?:is|are)\s+(?:a|an)\b|what(?:'s|\s+is|\s+are)\s+\w+(?:\s+\w+)?\s*\??$|explain\b|"
    r"tell\s+me\s+about\b|what\s+does\s+.+\s+do\b)",
    re.IGNORECASE,
)


def intent(question: str) -> Intent:
    """The kind of answer a question asks for (word patterns; no model)."""
    q = question.strip()
    if _HOWTO_START.search(q):
        return "howto"
    if _EXPLAIN_START.search(q):
        return "explain"
    if _FACT_START.search(q):
        return "fact"
    return "howto" if _HOWTO_WORDS.search(q) else "fact"


@dataclass(slots=True)
class Block:
    """A structural piece of a passage: a paragraph, a list (its items in order), a table (its lines) or a heading."""

    kind: Literal["para", "list", "table", "heading"]
    lines: list[str] = field(default_factory=list)
    intro: str = ""  # the paragraph line just before a list or table ("Check these in order:")


def blocks(text: str, section: str | None = None) -> list[Block]:
    """Split a chunk's text (breadcrumb dropped) into paragraphs, lists, tables and short headings."""
    body = strip_breadcrumb(text, section)
    out: list[Block] = []
    for raw in re.split(r"\n\s*\n", body):
        lines = [ln.strip() for ln in raw.splitlines() if ln.strip()]
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith("|"):
                j = i
                while j < len(lines) and lines[j].startswith("|"):
                    j += 1
                out.append(Block("table", lines[i:j]))
            elif _BULLET.match(line):
                j = i
                items: list[str] = []
                while j < len(lines) and (_BULLET.match(lines[j]) or (items and not lines[j].startswith("|")
                                                                      and not _looks_like_para_start(lines[j]))):
                    if _BULLET.match(lines[j]):
                        items.append(_MARKUP.sub("", _BULLET.sub("", lines[j])).strip())
                    else:  # a wrapped line continues the previous item
                        items[-1] = f"{items[-1]} {_MARKUP.sub('', lines[j])}".strip()
                    j += 1
                if out and out[-1].kind == "list" and not out[-1].intro and i == 0:
                    out[-1].lines += items  # a list split by a blank line
                else:
                    out.append(Block("list", items))
            else:
                j = i
                while j < len(lines) and not lines[j].startswith("|") and not _BULLET.match(lines[j]):
                    j += 1
                para = _MARKUP.sub("", " ".join(lines[i:j])).strip()
                if len(lines[i:j]) == 1 and _is_heading(para) and len(body) > len(para) + 1:
                    out.append(Block("heading", [para]))
                else:
                    out.append(Block("para", [para]))
            i = j
    for prev, blk in zip(out, out[1:], strict=False):
        if blk.kind in ("list", "table") and prev.kind == "para":
            last = split_sentences(prev.lines[0])
            blk.intro = last[-1] if last else ""
    return out


def _looks_like_para_start(line: str) -> bool:
    return bool(re.match(r"^[A-Z][a-z]+\s", line)) and line.rstrip().endswith((".", ":")) and len(line.split()) > 6


def _is_heading(text: str) -> bool:
    return len(text.split()) <= 10 and text[-1:] not in ".!?;,:" and not _BULLET.match(text)


Scorer = Callable[[Sequence[str]], list[float]]


@dataclass(frozen=True, slots=True)
class Passage:
    n: int
    text: str
    section: str | None


@dataclass(slots=True)
class Composed:
    """The composed answer: Markdown text with ``[n]`` markers, and what it was made of."""

    text: str
    intent: Intent
    kind: str  # "steps", "sentences", "table_row", "lead"
    passages: list[int]


def cite(sentence: str, n: int) -> str:
    """``"Paris is big."`` -> ``"Paris is big [1]."`` (the marker stays inside its sentence)."""
    s = sentence.rstrip()
    if ABBREVIATION.search(s):  # "until 5:00 p.m." keeps its abbreviation dot
        return f"{s} [{n}]"
    if s and s[-1] in ".!?":
        return f"{s[:-1]} [{n}]{s[-1]}"
    return f"{s} [{n}]."


def _term_score(q_terms: set[str], text: str) -> float:
    terms = set(content_terms(text))
    return len(q_terms & terms) / (len(q_terms) or 1)


def _steps(question: str, unit: Sequence[Passage]) -> list[str] | None:
    """The best-matching list of the unit as numbered, cited lines (with its intro sentence), or None."""
    q_terms = set(content_terms(question))
    best: tuple[float, int, Block] | None = None
    for p in unit:
        for blk in blocks(p.text, p.section):
            if blk.kind != "list" or len(blk.lines) < 2:
                continue
            score = _term_score(q_terms, " ".join([blk.intro, *blk.lines])) + 0.01 * len(blk.lines)
            if best is None or score > best[0]:
                best = (score, p.n, blk)
    if best is None:
        return None
    _, n, blk = best
    out = [cite(blk.intro.rstrip(":").rstrip() + ":", n).replace(f" [{n}]:", f" [{n}]:")] if blk.intro else []
    if out and out[0].endswith(f"[{n}]."):  # "Check these in order [1]." reads better with its colon
        out[0] = out[0][: -1] + ":"
    out += [f"{i}. {cite(item, n)}" for i, item in enumerate(blk.lines, start=1)]
    return out


def _units(p: Passage) -> list[tuple[str, str]]:
    """(sentence or table row, kind) of a passage, in order; headings skipped."""
    out: list[tuple[str, str]] = []
    for blk in blocks(p.text, p.section):
        if blk.kind == "para":
            out += [(s, "sentence") for s in split_sentences(blk.lines[0]) if not s.endswith(("?", ":"))]
        elif blk.kind == "list":
            out += [(s, "item") for s in blk.lines]
        elif blk.kind == "table":
            out += [(s, "table_row") for s in table_sentences(blk.lines)]
    return out


def _lead(unit: Sequence[Passage], k: int = 2) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for p in unit:
        for s, kind in _units(p):
            if kind == "sentence" and len(s.split()) >= 4:
                out.append((p.n, s))
            if len(out) >= k:
                return out
    return out


def compose(
    question: str, unit: Sequence[Passage], others: Sequence[Passage], label: str, *, scorer: Scorer | None = None,
    max_facts: int = 2,
) -> Composed | None:
    """Compose the answer from ``unit`` (the answering section's passages) and, for one extra point, ``others``.

    ``scorer`` scores candidate sentences against the question (higher is better; e.g. lexical + embedding); without
    it, the share of the question's content terms is used. Returns None when the unit has nothing to quote."""
    if not unit:
        return None
    score = scorer or (lambda texts: [_term_score(set(content_terms(question)), t) for t in texts])
    want = intent(question)
    head = f"From *{label}*:"
    if want == "howto":
        steps = _steps(question, unit)
        if steps:
            return Composed("\n".join([head, *steps]), want, "steps", sorted({p.n for p in unit}))
    cands = [(p.n, s, kind) for p in unit for s, kind in _units(p)]
    if not cands:
        return None
    scores = score([s for _, s, _ in cands])
    if want == "explain":
        lead = _lead(unit)
        best = max(range(len(cands)), key=lambda i: scores[i])
        picked = list(lead)
        if cands[best][1] not in [s for _, s in lead]:
            picked.append((cands[best][0], cands[best][1]))
        body = " ".join(cite(s, n) for n, s in picked)
        return Composed(f"{head}\n{body}", want, "lead", sorted({n for n, _ in picked}))
    order = sorted(range(len(cands)), key=lambda i: -scores[i])
    first = order[0]
    picked_idx = [first]
    # the next unit sentence continues the point ("It takes 5 minutes. After that, the light turns green.")
    nxt = first + 1
    if (max_facts > 1 and nxt < len(cands) and cands[nxt][2] == cands[first][2] == "sentence"
            and cands[nxt][0] == cands[first][0] and scores[nxt] >= 0.5 * scores[first] and scores[nxt] > 0):
        picked_idx.append(nxt)
    kind = "table_row" if cands[first][2] == "table_row" else "sentences"
    body = " ".join(cite(cands[i][1], cands[i][0]) for i in picked_idx)
    extra = secondary(question, [cands[i][1] for i in picked_idx], others, scores[first], score)
    text = f"{head}\n{body}"
    used = {cands[i][0] for i in picked_idx}
    if extra is not None:
        n, s, src_label = extra
        text += f"\n\nAlso, from *{src_label}*: {cite(s, n)}" if src_label else f"\n\nAlso: {cite(s, n)}"
        used.add(n)
    return Composed(text, want, kind, sorted(used))


def secondary(
    question: str, chosen: Sequence[str], others: Sequence[Passage], best_score: float, score: Scorer,
    *, ratio: float = 0.9, min_shared: int = 2,
) -> tuple[int, str, str] | None:
    """One sentence of another section that makes a distinct point: it scores at least ``ratio`` x the unit's best,
    shares at least ``min_shared`` content terms with the question, and shares few terms with what was chosen."""
    q_terms = set(content_terms(question))
    chosen_terms = set(content_terms(" ".join(chosen)))
    cands = [(p, s) for p in others for s, _ in _units(p)]
    cands = [(p, s) for p, s in cands if len(q_terms & set(content_terms(s))) >= min_shared]
    if not cands or best_score <= 0:
        return None
    scores = score([s for _, s in cands])
    i = max(range(len(cands)), key=lambda k: scores[k])
    p, s = cands[i]
    terms = set(content_terms(s))
    novel = len(terms - chosen_terms) / (len(terms) or 1)
    if scores[i] < ratio * best_score or novel < 0.5:
        return None
    return p.n, s, p.section.split(" > ")[-1] if p.section else ""


def is_table_sep(line: str) -> bool:
    return bool(_TABLE_SEP.match(line.strip()))
