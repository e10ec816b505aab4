"""Small text helpers shared by the answer layer: sentence splitting, content terms, overlap, a token estimate."""

from __future__ import annotations

import math
import re

_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?")

STOPWORDS = frozenset(
    """a an and are as at be been being but by can could did do does doing for from had has have having he her his how
    i if in into is it its me my of on or our she should so than that the their them then there these they this those
    to was we were what when where which while who whom why will with would you your about after again against all am
    any because before below between both during each few further here just more most no nor not now only other out
    over own same some such too under until up very also many much one ones upon""".split()  # noqa: SIM905
)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ., ! or ? followed by whitespace and an upper-case letter, digit or quote."""
    text = text.strip()
    if not text:
        return []
    return [s.strip() for s in _SENT_END.split(text) if s.strip()]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def content_terms(text: str) -> list[str]:
    """Lower-cased words minus stop words, with a crude plural strip so "crises" ~ "crisis" is not needed but
    "embargoes" ~ "embargo" is."""
    out = []
    for w in words(text):
        if w in STOPWORDS or (len(w) < 2 and not w.isdigit()):
            continue
        out.append(_stem(w))
    return out


def _stem(w: str) -> str:
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 3 and w.endswith("es") and w[-3] in "sxz":
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith("ss"):
        return w[:-1]
    return w


def overlap(query_terms: list[str], text_terms: list[str]) -> float:
    """Share of the distinct query terms present in the text (0..1)."""
    q = set(query_terms)
    if not q:
        return 0.0
    return len(q & set(text_terms)) / len(q)


def estimate_tokens(text: str) -> int:
    """Rough token estimate when no real tokenizer is reachable: ~4 characters per token for English, never less
    than one token per word-ish piece."""
    if not text:
        return 0
    return max(math.ceil(len(text) / 4), len(_WORD.findall(text)))
