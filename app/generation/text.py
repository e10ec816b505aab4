"""Small text helpers shared by the answer layer: sentence splitting, content terms, overlap, a token estimate."""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from retrieval.keyword.tantivy_index import english_analyzer

_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")
_POSSESSIVE = re.compile(r"['’]s$")

STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have having he her his how
    i if in into is it its me my of on or our she should so than that the their them then there these they this those
    to was we were what when where which while who whom why will with would you your about after again against all am
    any because before below between both during each few further here just more most no nor not now only other out
    over own same some such too under until up very also many much one ones upon""".split()  # noqa: SIM905
)


def fold(text: str) -> str:
    """``text`` with accents dropped ("wüstite" -> "wustite", "Kraków" -> "Krakow"): words are ASCII letters and
    digits, and without this a letter with an accent split a word in two, so a question typed without the accent
    matched no word of the passage."""
    if text.isascii():
        return text
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(fold(text))]


#: A degree sign ("16 °C", "20°F", "90°") is the word "degrees": "drops to 16 degrees" matches "16 °C for heating".
_DEGREE = re.compile(r"\s?[°º]\s?(?:[CF](?![A-Za-z]))?")


#: Phrasal verbs that English also writes as one word ("set it up" ~ "setup", "signing in" ~ "sign-in" ~ "signin"):
#: verb stem -> the particles that make the compound.
PHRASAL: dict[str, frozenset[str]] = {
    "set": frozenset({"up"}), "log": frozenset({"in", "on", "out", "off"}), "sign": frozenset({"in", "up", "out"}),
    "back": frozenset({"up"}), "check": frozenset({"out"}), "pick": frozenset({"up"}), "start": frozenset({"up"}),
    "shut": frozenset({"down"}), "hook": frozenset({"up"}), "plug": frozenset({"in"}), "roll": frozenset({"out"}),
    "break": frozenset({"down"}), "look": frozenset({"up"}), "print": frozenset({"out"}),
}
#: Phrasal verbs that mean a plain word the documents use ("send it back" is to return it, "get my money back" a
#: refund): verb (stem) -> particle -> that word's stem.
PHRASAL_MEANING: dict[str, dict[str, str]] = {
    **{verb: {"back": "return"} for verb in ("send", "sent", "ship", "mail", "post", "give", "gave")},
    "money": {"back": "refund"},
}
#: Both tables as one: verb (stem) -> particle -> the term the pair reads as ("set" -> "up" -> "setup").
_PHRASAL_TERMS: dict[str, dict[str, str]] = {
    **{verb: {p: verb + p for p in particles} for verb, particles in PHRASAL.items()},
    **PHRASAL_MEANING,
}
#: Words that may stand between a phrasal verb and its particle ("set it up", "log me in").
_PARTICLE_GAP = frozenset(["it", "them", "this", "that", "me", "him", "her", "us", "everything"])


def content_terms(text: str) -> list[str]:
    """Lower-cased words minus stop words, stemmed with the Snowball English stemmer that the keyword index uses
    ("updating" ~ "update", "returned" ~ "return", "charges" ~ "charged"): terms to match, not to show. A degree sign
    reads as "degrees". A phrasal verb of :data:`PHRASAL` reads as its one-word compound: "set it up", "setting up"
    and "setup" are all "setup", "sign in" and "sign-in" are "signin" ("how do I set it up" matches *First-time
    setup*); one of :data:`PHRASAL_MEANING` reads as the word it means ("send it back" is "return", "my money back"
    is "refund")."""
    if "°" in text or "º" in text:
        text = _DEGREE.sub(" degrees ", text)
    out = []
    ws = words(text)
    skip = -1
    for i, w in enumerate(ws):
        if i == skip:
            continue
        w = _POSSESSIVE.sub("", w)  # "the Hub's radios" is about the hub
        if w in STOPWORDS or (len(w) < 2 and not w.isdigit()):
            continue
        term = stem(w)
        pairs = _PHRASAL_TERMS.get(term)
        if pairs:
            for j in range(i + 1, min(i + 3, len(ws))):
                if ws[j] in pairs:
                    term, skip = pairs[ws[j]], j
                    break
                if ws[j] not in _PARTICLE_GAP:
                    break
        out.append(term)
    return out


_STEMMER = english_analyzer(stopwords=False)


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """The Snowball English stem of one lower-cased word (the word itself when the analyzer drops it)."""
    out = _STEMMER.analyze(word)
    return out[0] if len(out) == 1 else word


def overlap(query_terms: list[str], text_terms: list[str]) -> float:
    """Share of the distinct query terms present in the text (0..1)."""
    q = set(query_terms)
    if not q:
        return 0.0
    return len(q & set(text_terms)) / len(q)


#: The keyword rewrite of a follow-up (:func:`app.generation.rewrite.heuristic_rewrite`): the question as asked, then
#: the previous question's words in parentheses ("when will there be a proper fix? (motion alerts late Android)").
_CONTEXT_TAIL = re.compile(r"^(?P<own>.*?\S)\s+\((?P<context>[^()]+)\)$", re.DOTALL)


def split_context(query: str) -> tuple[str, str]:
    """(the asker's own words, the context words) of a keyword-rewritten follow-up; (``query``, "") otherwise."""
    m = _CONTEXT_TAIL.match(query.strip())
    return (m.group("own"), m.group("context")) if m else (query, "")


def estimate_tokens(text: str) -> int:
    """Rough token estimate when no real tokenizer is reachable: ~4 characters per token for English, never less
    than one token per word-ish piece."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(_WORD.findall(text)))


_TABLE_SEP = re.compile(r"^\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?$")
_BULLET = re.compile(r"^(?:[-*+•]|\d{1,3}[.)])\s+")
_MARKUP = re.compile(r"\*\*|__|`")


#: "[2]", "[1, 3]", "[1][2]" written in a document: never a citation (only the composer or the model cites)
_FORGED_MARKER = re.compile(r"\s?\[\s*\d+(?:\s*,\s*\d+)*\s*\]")


def strip_markers(text: str) -> str:
    """Remove citation-like markers that come from document text (its passages, titles and headings): a document
    containing "... [2] [1]", or a page titled "Register a moped[1]", must not make an answer that quotes it cite
    other passages."""
    return _FORGED_MARKER.sub("", text)


def strip_breadcrumb(text: str, section: str | None = None) -> str:
    """Drop the chunker's heading-path first line: one equal to ``section`` or, when the section is unknown, a
    short first line with a ``" > "`` separator and no sentence end."""
    first, sep, rest = text.strip().partition("\n")
    line = first.strip()
    if section is not None and section.strip():
        drop = line == section.strip()
    else:
        drop = " > " in line and line[-1:] not in ".!?" and len(line) <= 200
    return rest.strip() if drop and sep else ("" if drop else text.strip())


def table_cells(line: str) -> list[str]:
    inner = line.strip()
    inner = inner[1:] if inner.startswith("|") else inner
    inner = inner[:-1] if inner.endswith("|") else inner
    return [_MARKUP.sub("", c).strip() for c in inner.split("|")]


def table_sentences(lines: list[str]) -> list[str]:
    """Markdown table rows as short sentences, header cells zipped with row cells: ``"Kestrel Hub — Warranty
    period: 24 months"``. The separator row and the header row are never returned. Rows under a label row of a
    statement ("Net sales:") carry the label: ``"Services (Net sales) — 2024: 96,169"``."""
    rows = [ln for ln in lines if ln.strip()]
    header: list[str] = []
    if len(rows) >= 2 and _TABLE_SEP.match(rows[1].strip()):
        header, rows = table_cells(rows[0]), rows[2:]
    out = []
    group = ""  # a label row of a statement ("Net sales:") names the rows under it, up to its "Total ..." row
    for row in rows:
        if _TABLE_SEP.match(row.strip()):
            continue
        cells = table_cells(row)
        if not any(cells):
            continue
        if header and len(cells) > 1:
            pairs = [f"{h}: {c}" if h else c for h, c in zip(header[1:], cells[1:], strict=False) if c]
            if not pairs and cells[0].endswith(":"):
                group = cells[0].rstrip(":").strip()
            elif cells[0].lower().startswith("total"):
                group = ""
            label = f"{cells[0]} ({group})" if group and pairs else cells[0]
            out.append(f"{label} — {'; '.join(pairs)}" if pairs else cells[0])
        elif header:
            out.append(f"{header[0]}: {cells[0]}" if header[0] else cells[0])
        else:
            out.append(", ".join(c for c in cells if c))
    return out


#: The most words a heading line of a passage has ("Factory reset of the Kestrel Hub"); longer lines are text.
HEADING_MAX_WORDS = 10


def is_heading_line(block: str, max_words: int = HEADING_MAX_WORDS) -> bool:
    """One short line with no sentence end, no trailing colon and no list marker: a heading (or a heading path)."""
    block = block.strip()
    return bool(block) and "\n" not in block and len(block.split()) <= max_words and block[-1] not in ".!?;,:" \
        and not _BULLET.match(block)


def last_heading(text: str, max_words: int = HEADING_MAX_WORDS) -> str:
    """The last paragraph of ``text`` that is a heading line (see :func:`is_heading_line`), or ""."""
    return next((p.strip() for p in reversed(text.split("\n\n")) if is_heading_line(p, max_words)), "")


def overlap_length(prev: str, cur: str, min_chars: int = 12) -> int:
    """Length of the longest start of ``cur`` that ``prev`` ends with (the overlap the chunker repeats between two
    passages); 0 when shorter than ``min_chars``."""
    for k in range(min(len(prev), len(cur)), min_chars - 1, -1):
        if prev.endswith(cur[:k]):
            return k
    return 0


def _is_heading(block: str) -> bool:
    """A heading paragraph of :func:`answer_units_in_context`: as :func:`is_heading_line` but no ":" anywhere (a
    "Label: value" line is a candidate)."""
    return (
        "\n" not in block and len(block.split()) <= 10 and ":" not in block and block[-1:] not in ".!?;,"
        and not _BULLET.match(block)
    )


def answer_units(text: str, section: str | None = None) -> list[str]:
    """Candidate answer sentences of a passage (see :func:`answer_units_in_context`)."""
    return [unit for unit, _ in answer_units_in_context(text, section)]


def answer_units_in_context(text: str, section: str | None = None) -> list[tuple[str, str]]:
    """Candidate answer sentences of a passage with their context: breadcrumb dropped, table rows as sentences,
    list items and sentences of paragraphs. A short heading paragraph, a question (FAQ) or a line ending in ":" is
    not a candidate but the context of the candidates after it."""
    body = strip_breadcrumb(text, section)
    blocks = [b.strip() for b in re.split(r"\n\s*\n", body) if b.strip()]
    out: list[tuple[str, str]] = []
    context = ""
    for block in blocks:
        if len(blocks) > 1 and _is_heading(block):
            context = block
            continue
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            j = i
            table = lines[i].lstrip().startswith("|")
            while j < len(lines) and lines[j].lstrip().startswith("|") == table:
                j += 1
            units = table_sentences(lines[i:j]) if table else _paragraph_units([ln.strip() for ln in lines[i:j]])
            for unit in units:
                if unit.endswith(("?", ":")):
                    context = unit.rstrip(":")
                else:
                    out.append((unit, context))
            i = j
    return out


ABBREVIATION = re.compile(r"(?:\b[ap]\.m|\be\.g|\bi\.e|\bvs|\bapprox|\bMrs?|\bDr|\bSt|\bNo)\.$")


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ., ! or ? followed by whitespace and an upper-case letter, digit or quote; not
    after an abbreviation such as "a.m." or "e.g."."""
    text = text.strip()
    if not text:
        return []
    out: list[str] = []
    for part in (s.strip() for s in _SENT_END.split(text)):
        if not part:
            continue
        if out and ABBREVIATION.search(out[-1]):
            out[-1] += " " + part
        else:
            out.append(part)
    return out


def _paragraph_units(lines: list[str]) -> list[str]:
    """List items are units of their own; other lines join into prose split into sentences."""
    out: list[str] = []
    prose: list[str] = []
    for line in lines:
        if _BULLET.match(line):
            out += split_sentences(" ".join(prose))
            prose = []
            out += split_sentences(_MARKUP.sub("", _BULLET.sub("", line)))
        elif line:
            prose.append(line)
    out += split_sentences(" ".join(prose))
    return out


def has_term(term: str, text: str) -> bool:
    """``term`` occurs in ``text`` as a whole word (case-insensitive)."""
    return re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", text, re.IGNORECASE) is not None


# --- What kind of answer a wh-question expects ------------------------------------------------------------------------
_NUM = (r"(?:\d+(?:[.,]\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|"
        r"forty|fifty|sixty|ninety|hundred|a\s+few|several)")
_DURATION = (rf"\b{_NUM}(?:\s*(?:to|-|–|or)\s*{_NUM})?\s+(?:business\s+|working\s+|calendar\s+)?"
             r"(?:seconds?|minutes?|hours?|days?|weeks?|months?|years?|nights?|decades?|centuries|century)\b"
             r"|\b\d+(?:\.\d+)?\s?(?:s|min|h|hrs?)\b")
_MONTHS = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
           r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)")
_DATE = (rf"\b{_MONTHS}\.?\s+\d{{1,2}}\b|\b\d{{1,2}}\s+{_MONTHS}\b|\b(?:early|mid|late)[\s-]+{_MONTHS}\b"
         r"|\b(?:1[0-9]|20)\d\d(?:s)?\b|\b\d{4}-\d\d-\d\d\b|\b(?:mon|tues|wednes|thurs|fri|satur|sun)days?\b"
         r"|\b\d{1,2}(?::\d\d)?\s?(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}:\d\d\b|\b\d{1,2}(?:st|nd|rd|th)\s+century\b"
         r"|\b(?:today|tomorrow|tonight|overnight|immediately|right\s+away|same\s+day|next\s+business\s+day|daily|"
         r"weekly|monthly|yearly|annually|noon|midnight)\b")
_FREQUENCY = (r"\bevery\b|\b(?:daily|weekly|monthly|yearly|annually|hourly|once|twice|times)\b"
              r"|\b(?:per|a|each)\s+(?:second|minute|hour|day|night|week|month|year)\b")
#: A measure asked for ("how big", "how heavy", "how far", "how fast", "how cold") is answered by a figure in its
#: units: "How big is the hub?" by "110 x 110 x 32 mm", not by "up to 3 Hubs". The units of length, weight, distance,
#: speed and temperature as product pages and help pages write them ("how high" and "how long" stay general: a
#: temperature setting, a warranty).
_FIGURE = r"\d+(?:[.,]\d+)?\s?"
_MEASURES: list[tuple[str, str]] = [
    ("big|large|small|tall|wide|deep|thick",  # of a thing, or of storage ("how big a card")
     rf"\b{_FIGURE}(?:mm|cm|m|inch(?:es)?|ft|feet|foot|millimet(?:er|re)s?|centimet(?:er|re)s?|met(?:er|re)s?|"
     r"[kmgt]b|[kmgt]ib|bytes?)\b|\d\s?[x×]\s?\d|\d\s?(?:\"|″)|\b(?:dimensions?|size)\b"),
    (r"heavy|much\s+does\s+\w+(?:\s+\w+)?\s+weigh",
     rf"\b{_FIGURE}(?:g|kg|mg|lbs?|oz|grams?|kilograms?|pounds|ounces|tons?|tonnes?)\b|\bweigh"),
    ("far", rf"\b{_FIGURE}(?:m|km|mi|ft|feet|yards?|miles?|met(?:er|re)s?|kilomet(?:er|re)s?)\b"),
    ("fast|quick", rf"\b{_FIGURE}(?:[kmg]bps|[kmg]b/s|mph|km/h|kph|rpm|fps|[kmg]bit/s)\b|\bper\s+(?:second|hour)\b"
     rf"|{_DURATION}"),
    ("hot|cold|warm|cool", rf"{_FIGURE}(?:°|º|degrees?\b)|\b{_FIGURE}(?:c|f)\b"),
]
_EXPECTED: list[tuple[re.Pattern[str], re.Pattern[str]]] = [
    (re.compile(r"\bhow\s+(?:long|soon)\b", re.IGNORECASE), re.compile(f"{_DURATION}|{_DATE}", re.IGNORECASE)),
    (re.compile(r"\bhow\s+often\b", re.IGNORECASE), re.compile(f"{_FREQUENCY}|{_DURATION}", re.IGNORECASE)),
    *((re.compile(rf"\bhow\s+(?:{asked})\b", re.IGNORECASE), re.compile(answer, re.IGNORECASE))
      for asked, answer in _MEASURES),
    (re.compile(r"\bhow\s+(?:much|many|old|high)\b", re.IGNORECASE),  # the measures above come first
     re.compile(r"\d|\b(?:free|one|two|three|four|five|six|seven|eight|nine|ten|twelve|hundred|thousand|million|"
                r"billion|dozen|single|double)\b", re.IGNORECASE)),
    (re.compile(r"(?:^|[,;.]\s*|\b(?:and|so|but|then|if\s+\w+(?:\s+\w+){0,4})\s+)when\b"
                r"|\bwhen\s+(?:will|would|do|does|did|is|are|was|were|can|could|should|shall|am|has|have|had)\b"
                r"|\b(?:what|which|in\s+what|in\s+which)\s+(?:year|date|day|month|time|century|decade|period)\b",
                re.IGNORECASE), re.compile(f"{_DATE}|{_DURATION}|\\b(?:within|until|after|before|since)\\b",
                                          re.IGNORECASE)),
]


def expected_answer(question: str) -> re.Pattern[str] | None:
    """What a text that answers ``question`` contains, for the wh-questions whose answer has a form: a time or
    date ("when will it ship?", "what year..."), a duration ("how long..."), a frequency ("how often..."), a figure
    in the units of a measure ("how big / far / heavy / fast / cold", ``_MEASURES``), a number or amount ("how much /
    many / old / high"); None for other questions."""
    return next((answer for asked, answer in _EXPECTED if asked.search(question)), None)


# --- Kinds of value ---------------------------------------------------------------------------------------------
#: Values a question can name and a passage can state in other figures: "if I order at 3pm" and "orders placed before
#: 1:00 p.m."; "a 600 dollar bundle" and "orders worth more than 500 US dollars"; "my 256 GB card" and "cards larger
#: than 128 GB"; "dropping to 16 degrees" and "16 °C".
_VALUE_KINDS: dict[str, re.Pattern[str]] = {
    "clock time": re.compile(r"\b\d{1,2}(?::\d{2})?\s?(?:a\.?m\.?|p\.?m\.?)(?!\w)|\b\d{1,2}:\d{2}\b"
                             r"|\b(?:noon|midnight)\b", re.IGNORECASE),
    "money": re.compile(r"[$€£]\s?\d|\b\d[\d,.]*\s?(?:k\s+)?(?:(?:us|canadian|australian)\s+)?(?:dollars?|euros?|usd|"
                        r"eur|gbp|cad|bucks|quid)\b", re.IGNORECASE),
    "temperature": re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:°|º|degrees?\b)", re.IGNORECASE),
    "data size": re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:[kmgt]b|[kmgt]ib|(?:kilo|mega|giga|tera)bytes?)\b", re.IGNORECASE),
    "speed": re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:[kmg]bps|[kmg]bit/s|mph|km/h|kph)\b", re.IGNORECASE),
    "percentage": re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:%|percent\b|per\s+cent\b)", re.IGNORECASE),
}


def value_kinds(text: str) -> set[str]:
    """The kinds of value ``text`` states (``_VALUE_KINDS``: a clock time, an amount of money, a temperature, a data
    size, a speed, a percentage)."""
    return {kind for kind, pattern in _VALUE_KINDS.items() if pattern.search(text)}


# --- Initialisms ---------------------------------------------------------------------------------------------------
#: An initialism as users write it: two to five capitals ("UK", "NY", "DMV"); "I" and "A" are words.
_INITIALISM = re.compile(r"(?<![\w-])[A-Z]{2,5}(?![\w-])")
#: Small words a spelled-out name may have between its capitalised words ("Department of Motor Vehicles").
_NAME_JOINER = r"(?:(?:of|and|for|the|on|&)\s+)*"


def spelled_out(initialism: str, texts: Sequence[str]) -> tuple[str, int] | None:
    """The capitalised words of ``texts`` whose initials spell ``initialism`` ("United Kingdom" for UK, "Department of
    Motor Vehicles" for DMV), the most frequent when several do, and how often they occur; ``None`` when none does."""
    letters = [rf"{c}[a-z]+" for c in initialism]
    pattern = re.compile(r"\b" + (r"\s+" + _NAME_JOINER).join(letters) + r"\b")
    found: dict[str, int] = {}
    for text in texts:
        for m in pattern.finditer(text):
            name = " ".join(m.group(0).split())
            found[name] = found.get(name, 0) + 1
    if not found:
        return None
    name = max(found, key=lambda n: found[n])
    return name, found[name]


def spell_out_initialisms(question: str, texts: Sequence[str]) -> str:
    """``question`` with each initialism that ``texts`` (the passages found for it) spell out at least as often as
    they write it followed by the spelled-out name: "and to the UK?" over a table of "United Kingdom Standard" rows
    reads "and to the UK [United Kingdom]?", so the row on the United Kingdom matches the question's words (brackets,
    not parentheses: those mark a follow-up's context words, see :func:`split_context`). An initialism the passages
    mostly write as such ("VA" on va.gov, which says "Department of Veterans Affairs" now and then) is their word for
    it and is left as it is."""
    if not _INITIALISM.search(question):
        return question
    written = Counter(a for t in texts for a in _INITIALISM.findall(t))  # how often the passages write each one

    def expand(m: re.Match[str]) -> str:
        acronym = m.group(0)
        found = spelled_out(acronym, texts)
        if found is None:
            return acronym
        name, count = found
        return f"{acronym} [{name}]" if count >= written[acronym] else acronym

    return _INITIALISM.sub(expand, question)


# --- Comparisons ---------------------------------------------------------------------------------------------------
_SIDE = r"(?:the\s+|a\s+|an\s+|my\s+)?(?P<{0}>[\w][\w\-'&/+ ]*?)"
_SIDE_END = r"\s*(?:[?.!,;:]|\s[-–—]\s|\s(?:for|in|on|when|if|plan|plans)\b|$)"
_COMPARED = [
    re.compile(rf"\bdifferen(?:ce|ces|t)\s+between\s+{_SIDE.format('a')}\s+(?:and|or|&|vs\.?|versus)\s+"
               rf"{_SIDE.format('b')}{_SIDE_END}", re.IGNORECASE),
    re.compile(rf"\bcompar(?:e|ing|ison\s+of)\s+{_SIDE.format('a')}\s+(?:and|with|to|vs\.?|versus)\s+"
               rf"{_SIDE.format('b')}{_SIDE_END}", re.IGNORECASE),
    re.compile(rf"\bhow\s+(?:does|do|is|are)\s+{_SIDE.format('a')}\s+differ(?:ent)?\s+(?:from|to|than)\s+"
               rf"{_SIDE.format('b')}{_SIDE_END}", re.IGNORECASE),
    re.compile(r"(?P<a>\b[\w\-']+(?:\s+[\w\-']+){0,2})\s+(?:vs\.?|versus)\s+(?P<b>[\w\-']+(?:\s+[\w\-']+){0,2}?)"
               rf"{_SIDE_END}", re.IGNORECASE),
]


def compared(question: str) -> tuple[str, str] | None:
    """The two things a question compares ("What's the difference between Protect Plus and Protect Premium?",
    "compare the Hub with the Cam", "how does X differ from Y", "Plus vs Premium"), each with content terms; None for
    a question that compares nothing."""
    for pattern in _COMPARED:
        m = pattern.search(question)
        if m:
            a, b = m.group("a").strip(), m.group("b").strip()
            ta, tb = set(content_terms(a)), set(content_terms(b))
            if ta and tb and ta != tb:
                return a, b
    return None


def _side_match(side: str, cells: Sequence[str]) -> int | None:
    """The index of the cell that names ``side``: every content term of one is in the other, the closest such cell
    (fewest extra terms); None when no cell names it."""
    s = set(content_terms(side))
    best: tuple[int, int] | None = None
    for i, cell in enumerate(cells):
        c = set(content_terms(cell))
        if c and (s <= c or c <= s):
            extra = len(s ^ c)
            if best is None or extra < best[0]:
                best = (extra, i)
    return None if best is None else best[1]


def comparison_rows(lines: Sequence[str], sides: tuple[str, str]) -> list[str] | None:
    """A Markdown table read for a comparison of ``sides``: with a column for each (a plan table: "Feature | Free |
    Protect Plus | Protect Premium"), its rows where the two columns differ, as "Monthly price — Protect Plus: 3.99 US
    dollars; Protect Premium: 9.99 US dollars" (every row when none differs); with a row for each (first cells), those
    two rows as :func:`table_sentences` writes them. None when the table does not name both sides."""
    rows = [ln for ln in lines if ln.strip() and not _TABLE_SEP.match(ln.strip())]
    if len(rows) < 2:
        return None
    header = table_cells(rows[0])
    ia, ib = (_side_match(s, header[1:]) for s in sides)
    if ia is not None and ib is not None and ia != ib:
        ia, ib = ia + 1, ib + 1
        out: list[str] = []
        same: list[str] = []
        for row in rows[1:]:
            cells = table_cells(row)
            if len(cells) <= max(ia, ib) or not (cells[ia] or cells[ib]):
                continue
            line = f"{cells[0]} — {header[ia]}: {cells[ia] or '-'}; {header[ib]}: {cells[ib] or '-'}"
            (same if cells[ia].lower() == cells[ib].lower() else out).append(line)
        return out or same or None
    firsts = [table_cells(r)[0] for r in rows[1:]]
    ra, rb = (_side_match(s, firsts) for s in sides)
    if ra is not None and rb is not None and ra != rb:
        sentences = table_sentences(list(lines))
        picked = [s for s in sentences if s.split(" — ", 1)[0] in (firsts[ra], firsts[rb])]
        return picked if len(picked) >= 2 else None
    return None
