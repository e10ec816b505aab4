"""Entity-name normalisation shared by ingestion (entity extraction) and the query side (entity linking).

Both sides must map a surface form to the same key, so the rules are pure Python (no model): Unicode NFKD with
accents dropped, case-folded, apostrophes and dots removed (``U.S.`` -> ``us``, ``Nolan's`` -> ``nolan``), split on
non-alphanumerics, a light plural stemmer per token (``directors`` -> ``director``), and stop-words stripped from both
ends (``the Dark Knight`` -> ``dark knight``; inner ones stay: ``bank of america``).

``normalize_entity`` is idempotent, and for any token span of a query ``" ".join(entity_tokens(span))`` equals the
n-gram built by :func:`query_ngrams`, which is how exact linking works without running a model on the query.
"""

from __future__ import annotations

import re
import unicodedata

#: Entities longer than this (in tokens or characters) are not names but sentences; they normalise to "".
MAX_ENTITY_TOKENS = 6
MAX_ENTITY_CHARS = 60

_STOP_TEXT = """\
    a about above after again against all also am an and any are as at be because been before being below between
    both but by can could did do does doing down during each either few for from further had has have having he her
    here hers herself him himself his how i if in into is it its itself just me more most my myself neither no nor not
    of off on once only or other our ours ourselves out over own same she should so some such than that the their
    theirs them themselves then there these they this those through to too under until up very was we were what when
    where which while who whom whose why will with would you your yours yourself yourselves"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_TEXT.split())

_DROP = re.compile(r"[.'\u2019`]")
_TOKEN = re.compile(r"[^\W_]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _DROP.sub("", stripped.casefold())


def stem(token: str) -> str:
    """Light plural stemmer (Harman's S-stemmer, conservative): idempotent, leaves short and numeric tokens alone."""
    if len(token) <= 3 or not token.isalpha():
        return token
    if token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def entity_tokens(text: str) -> list[str]:
    """Folded, stemmed tokens of ``text`` (stop-words kept)."""
    return [stem(t) for t in _TOKEN.findall(_fold(text))]


def _strip_stop(tokens: list[str]) -> list[str]:
    start, end = 0, len(tokens)
    while start < end and tokens[start] in STOP_WORDS:
        start += 1
    while end > start and tokens[end - 1] in STOP_WORDS:
        end -= 1
    return tokens[start:end]


def normalize_entity(text: str) -> str:
    """Canonical key of an entity name; "" when nothing name-like is left (only stop-words, or too long)."""
    tokens = _strip_stop(entity_tokens(text))
    key = " ".join(tokens)
    if not tokens or len(tokens) > MAX_ENTITY_TOKENS or len(key) > MAX_ENTITY_CHARS:
        return ""
    return key


def query_ngrams(query: str, max_n: int = MAX_ENTITY_TOKENS) -> list[str]:
    """Every n-gram (longest first) of the query's tokens that could be a normalised entity key.

    N-grams that start or end with a stop-word are skipped (a normalised key never does).
    """
    tokens = entity_tokens(query)
    out: list[str] = []
    seen: set[str] = set()
    for n in range(min(max_n, len(tokens)), 0, -1):
        for i in range(len(tokens) - n + 1):
            span = tokens[i : i + n]
            if span[0] in STOP_WORDS or span[-1] in STOP_WORDS:
                continue
            key = " ".join(span)
            if key not in seen and len(key) <= MAX_ENTITY_CHARS:
                seen.add(key)
                out.append(key)
    return out


def content_tokens(text: str) -> list[str]:
    """Stemmed tokens of ``text`` that are not stop-words (used for partial/fuzzy linking)."""
    return [t for t in entity_tokens(text) if t not in STOP_WORDS]
