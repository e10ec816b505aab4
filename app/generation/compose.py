"""Extractive composition from the answering unit: what kind of answer the question wants, and that answer, cited.

- A how-to or troubleshooting question ("how do I...", "keeps going offline", "won't pair") gets the section whole,
  in order, steps as a numbered list; a long section gives its best-matching list with the sentence that introduces
  it. A section that holds several merged subsections (the chunker keeps their headings) answers from the best one.
- A fact question gets the best sentence or table row, and the following sentences that stay on the point.
- A "why" / "what is" question gets the lead sentences and the best one; when the section opens by introducing a
  list ("... one of these causes:"), the list.

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
    ABBREVIATION,
    compared,
    comparison_rows,
    content_terms,
    is_heading_line,
    overlap,
    split_context,
    split_sentences,
    strip_breadcrumb,
    table_sentences,
    value_kinds,
)
from core.figures import units_note

Intent = Literal["howto", "fact", "explain"]

#: The answer's own naming of the section it answers from, "From *Title › Section*:" (see :func:`compose`; group 1 is
#: the label). A close runner-up's point ("Also, from *Title › Section*: ...") is not where the answer came from: a
#: stored answer's unit never names it, and a client that sends the history gets the same context as a stored
#: conversation.
SOURCE_LABEL = re.compile(r"(?:^|\n)From \*([^*\n]+)\*:")
_DIGIT = re.compile(r"\d")  # a table row with a figure in it is quoted with its units line
_EXPLAIN_START = re.compile(
    r"^\s*(?:why\b|explain\b|tell\s+me\s+about\b|what\s+(?:is|are)\s+(?:a|an)\s|what(?:'s|\s+is|\s+are)\s+[\w\s-]{1,40}"
    r"(?:exactly|\?)|what\s+does\s+.+\s+(?:do|mean)\b|what(?:'s|\s+is)\s+the\s+difference\b)",
    re.IGNORECASE,
)
_HOW_FACT = r"how\s+(?:long|much|many|often|far|old|big|fast|soon)"
_FACT_START = re.compile(
    rf"^\s*(?:{_HOW_FACT}|when|which|who|whom|whose|where|what|is|are|does|do|did|will|was|were|has|have|am)\b"
    # a preposition before the question word asks for a fact too: "In what year ...?", "During what time frame ...?",
    # "To which address ...?", "For how long ...?", "By how much ...?" (they were read as how-to questions)
    r"|^\s*(?:in|on|at|during|after|before|by|for|from|to|of|with|since|until|under|within|through|between|around|"
    rf"about|into|over)\s+(?:what|which|whom|whose|{_HOW_FACT})\b",
    re.IGNORECASE,
)
_HOWTO_START = re.compile(
    r"^\s*(?:how\s+(?:do|can|should|would|to|could)\b|how\s+(?:i|we)\b|what\s+(?:should|do|can)\s+(?:i|we)\s+(?:do|check|try)"
    r"|what\s+now|what\s+are\s+the\s+steps)",
    re.IGNORECASE,
)

#: A statement that ends on its question word ("The second item of business on Wednesdays is usually what?", "X.25
#: had less functionality because of what?", "My Z-Wave lock asks for a PIN while pairing, which PIN?") asks for a
#: fact; "..., what now?", "what next?", "what to do?" ask for steps.
_WH_LAST = re.compile(r"\b(?:what|whom|who|which|whose)(?:\s+(?!now\b|to\b|do\b|should\b|can\b|next\b|else\b)[\w'-]+)?"
                      r"\s*[?.]*\s*$", re.IGNORECASE)

#: A situation told first and "why" asked last ("The thermostat keeps dropping to 16 degrees while we're home. Why?",
#: "I was charged twice this month, why??"): an explanation, not steps.
_WHY_LAST = re.compile(r"(?:^|[.!?,;]\s*)(?:but\s+|so\s+|any\s+idea\s+)?(?:why|how\s+come)\b[^.?!,;]{0,60}[?!.\s]*$",
                       re.IGNORECASE)


def intent(question: str) -> Intent:
    """The kind of answer a question asks for (word patterns; no model). Questions that open with a question word
    ask for a fact ("how long", "when", "does it...") or an explanation ("why", "what is a...", or a situation and
    then "why?"); "how do I", "what should I do" and everything that is not a question -- a symptom, a situation
    ("thermostat shows offline but the screen is on") -- wants the section's steps. An elliptical follow-up is read
    from its question word ("and the thermostat, does that have a battery too?" asks "does that have ...")."""
    q = question.strip()
    own, context = split_context(q)
    if context and asks_nothing_of_its_own(own):  # "and to the UK? (How much is shipping Canada)": asks as before
        q = context
    elif (lead := _ELLIPTICAL_LEAD.match(q)) and (word := _QUESTION_WORD.search(q, lead.end())):
        q = q[word.start():]  # "and the thermostat, does that have a battery too?" asks "does that have ..."
    if _HOWTO_START.search(q):
        return "howto"
    if _EXPLAIN_START.search(q) or _WHY_LAST.search(q):
        return "explain"
    if _FACT_START.search(q) or _WH_LAST.search(q):
        return "fact"
    return "howto"


#: An elliptical follow-up: a lead ("and to the UK?", "what about a temp address", "how about for business
#: customers?") and no question word after it.
_ELLIPTICAL_LEAD = re.compile(r"^\s*(?:and|also|what\s+about|how\s+about)\b", re.IGNORECASE)
_QUESTION_WORD = re.compile(r"\b(?:what|which|when|where|who|whom|whose|why|how|is|are|was|were|am|do|does|did|can|"
                            r"could|should|would|will|shall|may|might|must|has|have|had)\b", re.IGNORECASE)


def asks_nothing_of_its_own(question: str) -> bool:
    """An elliptical follow-up ("and to the UK?", "what about a temp address"): a lead and no question word after
    it, so it asks what the previous question asked ("How much is shipping to Canada?")."""
    m = _ELLIPTICAL_LEAD.match(question)
    return m is not None and not _QUESTION_WORD.search(question[m.end():])


#: Where a question that asks two things starts its second ask: a question word after a question mark, "and" or a
#: semicolon ("What size SD card should I buy, and how many days fit on 64GB?", "How big is the hub? Will it fit on a
#: bookshelf"); not after a bare comma ("If it arrived broken, can I return it?" asks one thing).
_SECOND_ASK = re.compile(r"(?:\?\s+|,?\s+and\s+|;\s+)(?=(?:how|what|when|where|which|who|why|is|are|can|could|"
                         r"do|does|did|will|would|should)\b)", re.IGNORECASE)


def asks(question: str) -> list[str]:
    """The separate things ``question`` asks, each of at least three words ("What size SD card should I buy for the
    cam" and "how many days fit on 64GB"); one item when it asks one thing."""
    own, _ = split_context(question.strip())
    parts = [p.strip(" ?,.;") for p in _SECOND_ASK.split(own)]
    found = [p for p in parts if len(p.split()) >= 3 and _QUESTION_WORD.search(p)]
    return found if len(found) > 1 else [own]


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
                faq = para.endswith("?") and len(para.split()) <= 25  # an FAQ question heads its answer
                heading = (is_heading_line(para) and not units_note(para)) or faq  # "(In millions)" heads no section
                if len(lines[i:j]) == 1 and heading and len(body) > len(para) + 1:
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


Scorer = Callable[[Sequence[str]], list[float]]
#: Scores texts against a question of its own (one ask of a question that asks two things).
AskScorer = Callable[[str, Sequence[str]], list[float]]


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
    kind: str  # "steps", "sentences", "table_row", "lead", "comparison"
    passages: list[int]


def cite(sentence: str, n: int) -> str:
    """``"Paris is big."`` -> ``"Paris is big [1]."`` (the marker stays inside its sentence, before a closing colon
    too)."""
    s = sentence.rstrip()
    if ABBREVIATION.search(s):  # "until 5:00 p.m." keeps its abbreviation dot
        return f"{s} [{n}]"
    if s and s[-1] in ".!?:":  # "check these in order:" -> "check these in order [1]:"
        return f"{s[:-1].rstrip()} [{n}]{s[-1]}"
    return f"{s} [{n}]."


def _term_score(q_terms: set[str], text: str) -> float:
    return overlap(list(q_terms), content_terms(text))


Piece = tuple[int, Block]  # (passage number, block)


def subsections(unit: Sequence[Passage]) -> list[tuple[str, list[Piece]]]:
    """The unit cut at the headings inside its text (the chunker merges small sections into their parent and keeps
    each heading as a line): (heading, pieces); the first has heading "" (the unit's own lead)."""
    subs: list[tuple[str, list[Piece]]] = [("", [])]
    for p in unit:
        for blk in blocks(p.text, p.section):
            if blk.kind == "heading":
                subs.append((blk.lines[0], []))
            else:
                subs[-1][1].append((p.n, blk))
    return [(h, pieces) for h, pieces in subs if pieces]


def comparison(question: str, subs: Sequence[tuple[str, list[Piece]]]) -> tuple[str, int, list[str]] | None:
    """For a question that compares two things (:func:`app.generation.text.compared`), the first table of the
    subsections that names both (a column or a row for each), read as :func:`comparison_rows`: (its subsection's
    heading, its passage number, the rows). None for other questions, or when no table names both."""
    sides = compared(question)
    if sides is None:
        return None
    for heading, pieces in subs:
        for n, blk in pieces:
            rows = comparison_rows(blk.lines, sides) if blk.kind == "table" else None
            if rows:
                return heading, n, rows
    return None


def best_subsection(
    question: str, subs: list[tuple[str, list[Piece]]], scorer: Scorer | None = None, summary_words: int = 40,
    value_weight: float = 0.5,
) -> tuple[str, list[Piece]]:
    """The subsection whose heading and text share most of the question's content terms (heading counted twice),
    plus, with ``scorer``, the score of its heading and first ``summary_words`` words ("My husband passed away" finds
    *When the Owner is no longer available* by meaning, not by shared words); the first on ties."""
    if len(subs) == 1:
        return subs[0]
    q_terms = set(content_terms(question))
    kinds = value_kinds(question)

    def lexical(sub: tuple[str, list[Piece]]) -> float:
        text = " ".join(" ".join([b.intro, *b.lines]) for _, b in sub[1])
        # a value of the kind the question names ("at 3pm" and "before 1:00 p.m.") counts as one more shared term
        return 2 * _term_score(q_terms, sub[0]) + _term_score(q_terms, text) + \
            value_weight * len(kinds & value_kinds(text))

    totals = [lexical(sub) for sub in subs]
    if scorer is not None:
        # one text per subsection (its heading and opening words), so that every one is read by meaning
        texts = []
        for heading, pieces in subs:
            words = " ".join(s for _, s, _ in _candidates(pieces)).split()[:summary_words]
            texts.append(f"{heading}: {' '.join(words)}" if heading else " ".join(words))
        totals = [t + v for t, v in zip(totals, scorer(texts), strict=True)]
    return subs[max(range(len(subs)), key=lambda i: totals[i])]


def _lists(pieces: Sequence[Piece]) -> list[tuple[int, str, list[tuple[int, str]]]]:
    """The lists of ``pieces``: (passage number of the intro, intro, [(passage number, item)]). A list that goes on
    in the next passage (the chunker cut it: the next piece is a list with no intro of its own) is one list, so its
    steps are numbered on ("5. Pack ... [1]" then "6. Drop the parcel off ... [2]", not "1. Drop ...")."""
    out: list[tuple[int, str, list[tuple[int, str]]]] = []
    prev: Block | None = None
    for n, blk in pieces:
        if blk.kind == "list":
            if prev is not None and prev.kind == "list" and not blk.intro and out:
                out[-1][2].extend((n, item) for item in blk.lines)
            else:
                out.append((n, blk.intro, [(n, item) for item in blk.lines]))
        prev = blk
    return out


def _steps(question: str, pieces: Sequence[Piece]) -> list[str] | None:
    """The best-matching list of ``pieces`` as numbered, cited lines (after its intro sentence), or None."""
    q_terms = set(content_terms(question))
    lists = [lst for lst in _lists(pieces) if len(lst[2]) >= 2]
    if not lists:
        return None
    n, intro, items = max(lists, key=lambda lst: _term_score(q_terms, " ".join([lst[1], *(t for _, t in lst[2])])))
    out = []
    if intro:
        out.append(cite(intro.rstrip(":").rstrip() + ":", n))
    out += [f"{i}. {cite(item, m)}" for i, (m, item) in enumerate(items, start=1)]
    return out


def _candidates(pieces: Sequence[Piece]) -> list[tuple[int, str, str]]:
    """(passage number, sentence or table row or list item, kind) in document order."""
    return [c for c, _ in _located(pieces)]


def _located(pieces: Sequence[Piece]) -> list[tuple[tuple[int, str, str], int]]:
    """:func:`_candidates`, each with the index of the block (paragraph, list, table) it comes from."""
    out: list[tuple[tuple[int, str, str], int]] = []
    for b, (n, blk) in enumerate(pieces):
        if blk.kind == "para":
            out += [((n, s, "sentence"), b) for s in split_sentences(blk.lines[0]) if not s.endswith(("?", ":"))]
        elif blk.kind == "list":
            out += [((n, s, "item"), b) for s in blk.lines]
        elif blk.kind == "table":
            note = units_note(blk.intro)
            out += [((n, f"{s} ({note})" if note and _DIGIT.search(s) else s, "table_row"), b)
                    for s in table_sentences(blk.lines)]
    return out


def _opens_with_list(pieces: Sequence[Piece]) -> bool:
    """The subsection's first sentence introduces a list ("... one of these causes:"): its first candidate is an item
    of a list with an intro."""
    located = _located(pieces)
    return bool(located) and located[0][0][2] == "item" and bool(pieces[located[0][1]][1].intro)


def _render(pieces: Sequence[Piece], limit: int) -> list[str] | None:
    """The whole subsection in order -- paragraphs as cited sentences, lists as numbered cited lines, tables as cited
    rows -- or None when it has more than ``limit`` sentences, items and rows."""
    count = sum(len(_candidates([p])) for p in pieces)
    if count > limit:
        return None
    out: list[str] = []
    step = 0
    prev: Block | None = None
    for n, blk in pieces:
        if blk.kind == "para":
            sents = split_sentences(blk.lines[0])
            if sents:
                out.append(" ".join(cite(s, n) for s in sents))
        elif blk.kind == "list":
            # a list the chunker cut goes on in the next passage: its steps are numbered on (see _lists)
            step = step if prev is not None and prev.kind == "list" and not blk.intro else 0
            out += [f"{i}. {cite(item, n)}" for i, item in enumerate(blk.lines, start=step + 1)]
            step += len(blk.lines)
        elif blk.kind == "table":
            out += [f"- {cite(row, n)}" for row in table_sentences(blk.lines)]
        prev = blk
    return out


def compose(
    question: str, unit: Sequence[Passage], others: Sequence[Passage], label: str, *, scorer: Scorer | None = None,
    whole_limit: int = 10, max_following: int = 2, want: Intent | None = None, explain_ratio: float = 0.7,
    short_paragraph: int = 3, max_rows: int = 12, ask_scorer: AskScorer | None = None,
) -> Composed | None:
    """Compose the answer from ``unit`` (the answering section's passages) and, for one extra point, ``others``.

    How-to: the subsection whole when it has at most ``whole_limit`` sentences, items and rows; else its best list
    with the sentence that introduces it; else the best sentence and what follows it. Fact: the best sentence's
    paragraph when it has at most ``short_paragraph`` sentences (those on its point: sharing a content term with the
    question or the best sentence); else the best sentence or table row and up to ``max_following`` following
    sentences of its paragraph that stay on the point. Explain: the lead sentences (with the rest of a short lead
    paragraph on their point) and the best one, and the best one beyond the lead when it scores ``explain_ratio`` of
    the best. A comparison ("the difference between Protect Plus and Protect Premium", :func:`comparison`): the rows of
    the unit's table that tell the two apart (at most ``max_rows``).
    ``scorer`` scores candidate sentences against the question (higher is better); without it, the share of the
    question's content terms is used. ``want`` overrides the kind read from the question.
    A fact or "why" question that asks two things (:func:`asks`: "What size SD card should I buy, and how many days
    fit on 64GB?") also gets the unit's best sentence or row for each ask (scored by ``ask_scorer``, else by shared
    content terms), in the unit's order: the best sentence for the whole question answers one ask.
    None when the unit has nothing to quote."""
    subs = subsections(unit)
    if not subs:
        return None
    compared_in = comparison(question, subs)
    if compared_in is not None:
        heading, n, rows = compared_in
        head = f"From *{label} › {heading}*:" if heading else f"From *{label}*:"
        body = "\n".join(f"- {cite(r, n)}" for r in rows[:max_rows])
        return Composed(f"{head}\n{body}", "fact", "comparison", [n])
    heading, pieces = best_subsection(question, subs, scorer)
    score = scorer or (lambda texts: [_term_score(set(content_terms(question)), t) for t in texts])
    want = want or intent(question)
    head = f"From *{label} › {heading}*:" if heading else f"From *{label}*:"
    if want == "explain" and _opens_with_list(pieces):
        # "why was I charged twice?" and the section opens "Two charges ... usually have one of these causes:": the
        # list is the explanation, told as a how-to section is
        want = "howto"
    if want == "howto":
        lines = _render(pieces, whole_limit) or _steps(question, pieces)
        if lines:
            sep = "\n" if any(ln[:1].isdigit() or ln.startswith("- ") for ln in lines) else " "
            return Composed(head + "\n" + sep.join(lines), want, "section", sorted({n for n, _ in pieces}))
    located = _located(pieces)
    cands = [c for c, _ in located]
    if not cands:
        return None
    scores = score([s for _, s, _ in cands])
    best = max(range(len(cands)), key=lambda i: scores[i])

    def paragraph(i: int) -> list[int]:
        """The sentences of candidate ``i``'s paragraph, when it is a short one (at most ``short_paragraph``), that
        share a content term with the question or with sentence ``i`` (on the same point); [] otherwise."""
        same = [j for j, (c, b) in enumerate(located) if b == located[i][1] and c[2] == "sentence"]
        if cands[i][2] != "sentence" or len(same) > short_paragraph:
            return []
        point = set(content_terms(question)) | set(content_terms(cands[i][1]))
        return [j for j in same if j == i or point & set(content_terms(cands[j][1]))]

    if want == "explain":
        lead = [i for i, c in enumerate(cands) if c[2] == "sentence" and len(c[1].split()) >= 4][:2]
        # the best point beyond the lead ("what does solid amber mean": the table row), when it is near the best
        rest = [i for i in range(len(cands)) if i not in lead]
        point = max(rest, key=lambda i: scores[i]) if rest else best
        # a short lead paragraph is quoted whole ("...smart alerts. Live view ... work without a subscription.")
        whole = paragraph(lead[0]) if lead else []
        picked = sorted({*lead, *whole, best, *([point] if scores[point] >= explain_ratio * scores[best] else [])})
        kind = "lead"
    elif len(paragraph(best)) > 1:
        # a short paragraph on one point is told whole: "A subscription belongs to a home, not to a person. Every
        # member of the home ... receives the smart alerts of the plan."
        picked = paragraph(best)
        kind = "sentences"
    else:
        picked = [best]
        q_terms = set(content_terms(question)) | set(content_terms(cands[best][1]))
        # the next sentences of the same passage continue the point ("It retries. It tries every 10 minutes.")
        for nxt in range(best + 1, min(best + 1 + max_following, len(cands))):
            same = cands[nxt][2] == cands[best][2] == "sentence" and cands[nxt][0] == cands[best][0]
            if not same or not q_terms & set(content_terms(cands[nxt][1])):
                break
            picked.append(nxt)
        kind = "table_row" if cands[best][2] == "table_row" else "sentences"
    picked = sorted({*picked, *_per_ask(question, [s for _, s, _ in cands], ask_scorer)})
    body = " ".join(cite(cands[i][1], cands[i][0]) for i in picked)
    text = f"{head}\n{body}"
    used = {cands[i][0] for i in picked}
    extra = secondary(question, [cands[i][1] for i in picked], others, scores[best], score)
    if extra is not None:
        n, s, src_label = extra
        text += f"\n\nAlso, from *{src_label}*: {cite(s, n)}" if src_label else f"\n\nAlso: {cite(s, n)}"
        used.add(n)
    return Composed(text, want, kind, sorted(used))


def _per_ask(question: str, texts: Sequence[str], ask_scorer: AskScorer | None) -> list[int]:
    """For a question that asks two or more things (:func:`asks`), the index of the best of ``texts`` for each ask
    that shares a content term with it; [] for a question that asks one thing."""
    parts = asks(question)
    if len(parts) < 2 or not texts:
        return []
    out = []
    for part in parts:
        terms = set(content_terms(part))
        scores = ask_scorer(part, texts) if ask_scorer else [_term_score(terms, t) for t in texts]
        best = max(range(len(texts)), key=lambda i: scores[i])
        if terms & set(content_terms(texts[best])):
            out.append(best)
    return out


def secondary(
    question: str, chosen: Sequence[str], others: Sequence[Passage], best_score: float, score: Scorer,
    *, ratio: float = 0.7, min_shared: int = 2,
) -> tuple[int, str, str] | None:
    """One sentence of another section that makes a distinct point: it scores at least ``ratio`` x the unit's best,
    shares at least ``min_shared`` content terms with the question, and shares few terms with what was chosen."""
    q_terms = set(content_terms(question))
    chosen_terms = set(content_terms(" ".join(chosen)))
    cands = [(p, s) for p in others for _, s, _ in _candidates([(p.n, b) for b in blocks(p.text, p.section)])]
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


_CITED = re.compile(r"\[\d+\]")
_HEAD = re.compile(r"^From \*(?P<label>[^*]+)\*")


def named_row(
    main: Composed, passages: Sequence[Passage], pinned: Sequence[str] = ()
) -> tuple[int, str, str] | None:
    """A table row elsewhere in the passages that is *named* by the answer: its first cell is the answering
    section's heading ("Backup battery" -> the spec row "Backup battery — 2,000 mAh, about 4 hours"), or holds a code
    the question pins ("E45" -> the error-code row "E45 — ... retries automatically every 10 minutes"). Such a row
    carries the number the prose leaves out. None when no row is named, or the answer quotes it already.
    Returns (passage number, row, its section's last heading)."""
    m = _HEAD.match(main.text)
    heading = m.group("label").split(" › ")[-1] if m else ""
    head_terms = set(content_terms(heading))
    codes = {p for p in pinned if any(ch.isdigit() for ch in p)}
    quoted = _CITED.sub("", main.text)
    for p in passages:
        for blk in blocks(p.text, p.section):
            if blk.kind != "table":
                continue
            for row in table_sentences(blk.lines):
                key = row.split(" — ", 1)[0] if " — " in row else ""
                key_terms = set(content_terms(key))
                by_heading = bool(key_terms) and key_terms == head_terms
                by_code = any(c == key.strip().lower() for c in codes)
                if (by_heading or by_code) and row not in quoted:
                    return p.n, row, p.section.split(" > ")[-1] if p.section else ""
    return None


def also_from(
    question: str, main: Composed, alternative: Sequence[Passage], label: str, *, scorer: Scorer | None = None,
    novelty: float = 0.35,
) -> str | None:
    """The close runner-up section's best point, as an "Also, from *label*: ..." line: its best sentence or table row
    (and what follows on the point). None when it shares no content term with the question, or when less than
    ``novelty`` of its content terms are new to ``main`` (it repeats the answer)."""
    alt = compose(question, alternative, (), label, scorer=scorer, want="fact")
    if alt is None:
        return None
    head, _, body = alt.text.partition("\n")
    q_terms = set(content_terms(question))
    terms = set(content_terms(_CITED.sub("", body)))
    if not q_terms & terms or len(terms - set(content_terms(_CITED.sub("", main.text)))) < novelty * len(terms):
        return None
    return f"Also, from {head.removeprefix('From ')} {body}"
