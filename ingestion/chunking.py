"""Structure-aware chunking: parser elements -> ``ChunkDraft``s sized in embedding-model tokens.

Rules:
- a chunk never spans two sections; small neighbouring sections under the same parent merge, and the merged chunk's
  ``section_path`` is that parent (each merged section's heading stays in the text);
- a long section splits at paragraph, then sentence, then word boundaries (never mid-word), with ``overlap_tokens``
  of trailing sentences (or words) of the previous chunk repeated at the start of the next one; a merged
  subsection's heading never ends a chunk (it starts the next one, with its body and no overlap), and a merged
  subsection that goes on in the next chunk has its heading repeated there, before the overlap;
- a table is kept whole up to ``table_max_tokens``, then split by rows with its header row repeated in every part;
  code blocks are kept whole up to ``table_max_tokens``, then split by lines.

Each chunk's text starts with its heading breadcrumb ("Returns > Refunds > Damaged items"). Body text under a
heading often never repeats the heading's words ("Send us a photo within 14 days" under "Damaged items"), so without
the breadcrumb neither BM25 nor the embedding can match "refund for a damaged item" to it, and the generator could not
tell which policy a passage belongs to. It costs a few tokens per chunk and is counted in ``token_count``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from core.figures import units_note
from core.types import Element

#: v3: plain-text files are read with their headings and lists (documents chunked by v2 are flat until reindexed);
#: v4: the line saying what a table's figures count ("(In millions, ...)") heads the table and each part of it;
#: v5: a merged subsection's heading never ends a chunk, it starts the next one with its body, and a merged
#: subsection that goes on in the next chunk is named at its start
CHUNKER_VERSION = "structure-v5"

_SENTENCE = re.compile(r"(?<=[.!?。])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9À-ÖØ-Þ])|\n+")
_SKIP_KINDS = {"page_break"}


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    text: str
    section_path: tuple[str, ...]
    page_start: int | None
    page_end: int | None
    element_types: tuple[str, ...]
    token_count: int
    order: int


@dataclass(slots=True)
class _Unit:
    """A piece of body text that is never cut further when packing (a paragraph, sentence, table part...)."""

    text: str
    kind: str
    tokens: int
    page: int | None
    overlappable: bool = True
    cont: bool = False  # continues the previous unit's paragraph (a later sentence of it)


@dataclass(slots=True)
class _Section:
    path: tuple[str, ...]
    heading: str
    units: list[_Unit] = field(default_factory=list)

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.units)


def breadcrumb(path: Sequence[str]) -> str:
    return " > ".join(path)


def _split_words(text: str, limit: int, count: Callable[[str], int]) -> list[str]:
    words = text.split()
    parts: list[str] = []
    cur: list[str] = []
    for word in words:
        if cur and count(" ".join([*cur, word])) > limit:
            parts.append(" ".join(cur))
            cur = []
        cur.append(word)
    if cur:
        parts.append(" ".join(cur))
    return parts


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text) if s and s.strip()]


def _item_text(el: Element) -> str:
    """A list item keeps its marker ("3." of an ordered list, "-" otherwise), so a chunk shows a list as a list."""
    return f"{el.metadata.get('marker') or '-'} {el.text.strip()}"


def _text_units(el: Element, limit: int, count: Callable[[str], int]) -> list[_Unit]:
    text = _item_text(el) if el.kind == "list_item" else el.text
    n = count(text)
    if n <= limit:
        return [_Unit(text, el.kind, n, el.page)]
    units: list[_Unit] = []
    for sentence in _sentences(text):
        pieces = [sentence] if count(sentence) <= limit else _split_words(sentence, limit, count)
        units += [_Unit(p, el.kind, count(p), el.page, cont=bool(units)) for p in pieces]
    return units


def _table_units(el: Element, limit: int, count: Callable[[str], int], note: str = "") -> list[_Unit]:
    """The table as one unit, or as parts of whole rows that each repeat its header; ``note`` (the line saying what
    its figures count, :func:`core.figures.units_note`) heads the table and every part."""
    lead = [note, ""] if note else []
    whole = "\n".join([*lead, el.text])
    n = count(whole)
    if n <= limit:
        return [_Unit(whole, "table", n, el.page, overlappable=False)]
    lines = el.text.splitlines()
    header = lines[:2] if len(lines) > 2 and lines[1].startswith("|-") else []
    rows = lines[len(header) :]
    units: list[_Unit] = []
    part: list[str] = []
    for row in rows:
        if part and count("\n".join([*lead, *header, *part, row])) > limit:
            text = "\n".join([*lead, *header, *part])
            units.append(_Unit(text, "table", count(text), el.page, overlappable=False))
            part = []
        part.append(row)
    if part:
        text = "\n".join([*lead, *header, *part])
        units.append(_Unit(text, "table", count(text), el.page, overlappable=False))
    return units


def _code_units(el: Element, limit: int, count: Callable[[str], int]) -> list[_Unit]:
    """Code stays whole up to ``limit`` (else split by lines), fenced so Markdown renders it as code."""

    def unit(code: str) -> _Unit:
        text = f"```\n{code}\n```"
        return _Unit(text, "code", count(text), el.page, overlappable=False)

    if count(el.text) + 2 <= limit:
        return [unit(el.text)]
    units: list[_Unit] = []
    part: list[str] = []
    for line in el.text.splitlines():
        if part and count("\n".join([*part, line])) + 2 > limit:
            units.append(unit("\n".join(part)))
            part = []
        part.append(line)
    if part:
        units.append(unit("\n".join(part)))
    return units


def _sections(elements: Sequence[Element], target: int, table_max: int, count: Callable[[str], int]) -> list[_Section]:
    sections: list[_Section] = []
    for el in elements:
        if el.kind in _SKIP_KINDS or not el.text.strip():
            continue
        if el.kind == "title":
            sections.append(_Section(el.section_path, el.text))
            continue
        if not sections or sections[-1].path != el.section_path:
            sections.append(_Section(el.section_path, el.section_path[-1] if el.section_path else ""))
        if el.kind == "table":
            units = sections[-1].units
            note = units[-1].text if units and units[-1].kind == "text" and units_note(units[-1].text) else ""
            if note:
                units.pop()  # it travels with the table, into every part of it
            units += _table_units(el, table_max, count, note)
        elif el.kind == "code":
            sections[-1].units += _code_units(el, max(table_max, target), count)
        else:
            sections[-1].units += _text_units(el, target, count)
    return [s for s in sections if s.units]


def _headings_as_text(elements: Sequence[Element]) -> list[Element]:
    """A document's headings as body text under their parents (a heading is not repeated as its own breadcrumb)."""
    return [
        replace(el, kind="text", section_path=el.section_path[:-1])
        for el in elements
        if el.kind == "title" and el.text.strip()
    ]


def _merge_small(sections: list[_Section], target: int, count: Callable[[str], int]) -> list[_Section]:
    """Merge runs of neighbouring sections under the same (non-empty) parent heading while they fit in one chunk."""
    out: list[_Section] = []
    for sec in sections:
        prev = out[-1] if out else None
        parent = sec.path[:-1]
        sibling = prev is not None and len(prev.path) == len(sec.path) and prev.path[:-1] == parent
        if (
            prev is not None
            and parent
            and (prev.path == parent or sibling)
            and prev.tokens + sec.tokens + count(sec.heading) + count(prev.heading) <= target
        ):
            units = list(prev.units)
            if sibling:
                units.insert(0, _Unit(prev.heading, "title", count(prev.heading), prev.units[0].page, False))
            units.append(_Unit(sec.heading, "title", count(sec.heading), sec.units[0].page, False))
            out[-1] = _Section(parent, parent[-1], [*units, *sec.units])
            continue
        out.append(sec)
    return out


def _overlap(units: list[_Unit], budget: int, count: Callable[[str], int]) -> list[_Unit]:
    """Trailing sentences of the previous chunk (or its last words) worth at most ``budget`` tokens."""
    if budget <= 0 or not units or not units[-1].overlappable:
        return []
    sentences = _sentences(units[-1].text)
    taken: list[str] = []
    for sentence in reversed(sentences):
        if count(" ".join([sentence, *taken])) > budget:
            break
        taken.insert(0, sentence)
    if not taken:
        words = units[-1].text.split()
        while words and count(" ".join(words)) > budget:
            words = words[max(1, len(words) // 4) :] if len(words) > 8 else words[1:]
        taken = [" ".join(words)] if words else []
    text = " ".join(taken)
    return [_Unit(text, units[-1].kind, count(text), units[-1].page)] if text else []


def _pack(section: _Section, target: int, overlap: int, count: Callable[[str], int]) -> list[list[_Unit]]:
    head_tokens = count(breadcrumb(section.path)) if section.path else 0
    budget = max(target - head_tokens, 8)
    groups: list[list[_Unit]] = []
    cur: list[_Unit] = []
    cur_tokens = 0
    fresh = 0  # units in ``cur`` that are not overlap
    heading: _Unit | None = None  # the merged subsection the packing is in (its heading unit)
    for unit in section.units:
        if fresh and cur_tokens + unit.tokens > budget:
            if fresh > 1 and cur[-1].kind == "title":
                # a merged subsection's heading goes with its body into the next chunk (a chunk that ended on
                # "I changed my router" left the next one with that section's text and no heading); no overlap
                # from the subsection before it
                groups.append(cur[:-1])
                cur, cur_tokens, fresh = [cur[-1], unit], cur[-1].tokens + unit.tokens, 2
                heading = cur[0] if unit.kind != "title" else unit
                continue
            groups.append(cur)
            cur = _overlap(cur, overlap, count) if unit.overlappable else []
            if cur and cur[0].tokens + unit.tokens > budget:
                cur = []
            if heading is not None and unit.kind != "title":
                # a subsection that goes on in the next chunk is named there too, before the overlap ("Factory
                # reset of the Kestrel Hub" heads the chunk that says the accessories must be paired again)
                if cur and heading.tokens + cur[0].tokens + unit.tokens > budget:
                    cur = []
                cur.insert(0, heading)
            cur_tokens, fresh = sum(u.tokens for u in cur), 0
        if unit.kind == "title":
            heading = unit
        cur.append(unit)
        cur_tokens += unit.tokens
        fresh += 1
    if fresh:
        groups.append(cur)
    return groups


def _render(path: tuple[str, ...], units: list[_Unit]) -> str:
    """Breadcrumb, then one paragraph per unit (a unit that continues a paragraph joins it); the items of a list
    stay together, one per line."""
    body: list[str] = []
    for i, unit in enumerate(units):
        if unit.cont and i > 0 and body:
            body[-1] += " " + unit.text
        elif unit.kind == "list_item" and i > 0 and body and units[i - 1].kind == "list_item":
            body[-1] += "\n" + unit.text
        else:
            body.append(unit.text)
    return "\n\n".join([breadcrumb(path), *body] if path else body)


def chunk_elements(
    elements: Sequence[Element],
    *,
    count_tokens: Callable[[str], int],
    target_tokens: int,
    overlap_tokens: int,
    table_max_tokens: int,
) -> list[ChunkDraft]:
    """Group parser elements into retrieval chunks (see the module docstring for the rules)."""
    if overlap_tokens >= target_tokens:
        raise ValueError("overlap_tokens must be smaller than target_tokens")
    # the rules below count many texts more than once (a sentence, then the same sentence as a piece): 55,306 counts
    # of 31,281 distinct texts for a 619-page manual
    count_tokens = functools.lru_cache(maxsize=None)(count_tokens)
    found = _sections(elements, target_tokens, table_max_tokens, count_tokens)
    if not found:  # headings and nothing under them (a page that is one title): the headings are its text
        found = _sections(_headings_as_text(elements), target_tokens, table_max_tokens, count_tokens)
    sections = _merge_small(found, target_tokens, count_tokens)
    drafts: list[ChunkDraft] = []
    for section in sections:
        for units in _pack(section, target_tokens, overlap_tokens, count_tokens):
            text = _render(section.path, units)
            pages = [u.page for u in units if u.page is not None]
            kinds = tuple(dict.fromkeys(u.kind for u in units if u.kind != "title"))
            drafts.append(
                ChunkDraft(
                    text=text,
                    section_path=section.path,
                    page_start=min(pages) if pages else None,
                    page_end=max(pages) if pages else None,
                    element_types=kinds,
                    token_count=count_tokens(text),
                    order=len(drafts),
                )
            )
    return drafts
