"""No-LLM backend: the answer is quoted from the answering section, cited with ``[n]``.

The pipeline puts the answering unit (the chosen section, :mod:`app.generation.units`) first in the prompt; this
backend reads the question and passages back from the prompt (:func:`app.generation.prompt.parse_prompt`), takes the
leading passages of that one section as the unit and composes from it (:mod:`app.generation.compose`): steps as a
numbered list for a how-to question, the best sentence or table row for a fact question, the lead sentences for a
"why / what is" question, headed by where it comes from. Sentences are scored by idf-weighted query-term overlap
(BM25-like, idf over the candidates) plus, when an embedder is given, the cosine between question and candidate
embeddings. Always available, so it is also the fallback when the LLM is down.

:meth:`ExtractiveBackend.select` (best sentences across all passages) remains for callers that have no unit.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import AsyncGenerator, Sequence

import numpy as np

from app.generation.answerability import constraint_terms
from app.generation.compose import Passage, also_from, cite, compose, named_row
from app.generation.prompt import REFUSAL_TEXT, parse_prompt, passage_tags
from app.generation.text import (
    answer_units_in_context,
    content_terms,
    estimate_tokens,
    expected_answer,
    has_term,
    is_heading_line,
    last_heading,
    overlap_length,
    split_context,
    strip_breadcrumb,
)
from app.generation.units import unit_label
from retrieval.embedders import embed_now
from retrieval.protocols import Embedder

_PIECE = re.compile(r"\S+\s*")
#: A follow-up's sentences are scored by the asker's own words plus this share of the score for the whole rewritten
#: query (own words and the previous question's).
CONTEXT_SHARE = 0.5


class ExtractiveBackend:
    name = "extractive"
    model = "extractive-v1"
    tokenizer_source = "estimate"

    def __init__(
        self,
        embedder: Embedder | None = None,
        *,
        max_sentences: int = 2,
        context_window: int = 8192,
        embedding_weight: float = 1.0,
        min_score: float = 0.15,
        embed_candidates: int = 8,
        secondary_ratio: float = 0.5,
        context_weight: float = 0.5,
        constraint_weight: float = 0.5,
        phrase_weight: float = 0.5,
        answer_type_weight: float = 0.6,
    ) -> None:
        self.embedder = embedder
        self.max_sentences = max_sentences
        self.context_window = context_window
        self.embedding_weight = embedding_weight
        self.min_score = min_score
        self.embed_candidates = embed_candidates
        self.secondary_ratio = secondary_ratio
        self.context_weight = context_weight
        self.constraint_weight = constraint_weight
        self.phrase_weight = phrase_weight
        self.answer_type_weight = answer_type_weight

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def select(
        self, question: str, passages: list[tuple[int, str]], sections: dict[int, str] | None = None
    ) -> list[tuple[int, str, float]]:
        """Best candidates as (passage number, sentence, score), best first: at most ``max_sentences``; one after
        the first only when its score is at least ``secondary_ratio`` x the best and it shares a content term with
        the question. ``sections`` (passage number -> heading path) names the breadcrumb line to drop."""
        sections = sections or {}
        seen: set[str] = set()
        cands: list[tuple[int, str, str]] = []
        for n, text in passages:
            for unit, context in answer_units_in_context(text, sections.get(n)):
                if unit not in seen:  # overlapping chunks repeat sentences and table headers
                    seen.add(unit)
                    cands.append((n, unit, context))
        if not cands:
            return []
        q_terms = set(content_terms(question))
        sent_terms = [set(content_terms(s)) for _, s, _ in cands]
        ctx_terms = [set(content_terms(c)) - own for (_, _, c), own in zip(cands, sent_terms, strict=True)]
        scores = self.score(question, [s for _, s, _ in cands], [c for _, _, c in cands])
        # a small prior for higher-ranked passages breaks ties toward the retriever's order
        scores = scores - 0.01 * np.array([n for n, _, _ in cands], dtype=np.float32)
        order = np.argsort(-scores, kind="stable")
        best = float(scores[order[0]])
        picked = [order[0]]
        for i in order[1:]:
            if len(picked) >= self.max_sentences or best <= 0 or scores[i] < self.secondary_ratio * best:
                break
            if q_terms & (sent_terms[i] | ctx_terms[i]):
                picked.append(i)
        return [(cands[i][0], cands[i][1], float(scores[i])) for i in picked]

    def score(self, question: str, texts: Sequence[str], contexts: Sequence[str] | None = None) -> np.ndarray:
        """Relevance of each candidate to ``question``: idf-weighted share of the question's content terms (idf over
        the candidates; the context line above a candidate -- heading, FAQ question, "...:" line -- counts at
        ``context_weight``), plus ``phrase_weight`` x the share of the question's adjacent term pairs found adjacent
        in the candidate ("solid amber": the table row, not a sentence with "light" and "Hub"), plus
        ``constraint_weight`` x the share of its codes and numbers, plus ``answer_type_weight`` when the question
        expects a form of answer (:func:`app.generation.text.expected_answer`: a date, a duration, a number) and the
        candidate, sharing a term with it, has one, plus ``embedding_weight`` x cosine for the ``embed_candidates``
        best lexical candidates (the others are never preferred over an embedded one)."""
        contexts = contexts or [""] * len(texts)
        q_terms = set(content_terms(question))
        sent_terms = [set(content_terms(s)) for s in texts]
        ctx_terms = [set(content_terms(c)) - own for c, own in zip(contexts, sent_terms, strict=True)]
        df = Counter(t for terms in sent_terms for t in terms)
        n_docs = len(texts)
        idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
        norm = sum(idf.values()) or 1.0
        lexical = np.array(
            [
                (sum(idf[t] for t in q_terms & own) + self.context_weight * sum(idf[t] for t in q_terms & ctx)) / norm
                for own, ctx in zip(sent_terms, ctx_terms, strict=True)
            ],
            dtype=np.float32,
        )
        # a phrase of the question ("solid amber", "restocking fee") found as such beats its words scattered apart
        q_pairs = _pairs(content_terms(question))
        if q_pairs and self.phrase_weight:
            lexical += self.phrase_weight * np.array(
                [len(q_pairs & _pairs(content_terms(t))) / len(q_pairs) for t in texts], dtype=np.float32
            )
        # a code or number the question names ("E12", "24 months") picks the sentence or table row that has it
        pinned = constraint_terms(question, names=False)
        if pinned:
            lexical += self.constraint_weight * np.array(
                [sum(has_term(t, s) for t in pinned) / len(pinned) for s in texts], dtype=np.float32
            )
        # a wh-question whose answer has a form ("when...": a date or a time limit; "how much...": a number) prefers
        # the sentences on its words that have one ("within 10 business days", not "Credit: 40 US dollars")
        expected = expected_answer(question)
        if expected is not None and self.answer_type_weight:
            lexical += self.answer_type_weight * np.array(
                [float(bool(expected.search(t))) if x > 0 else 0.0 for t, x in zip(texts, lexical, strict=True)],
                dtype=np.float32,
            )
        scores = lexical.copy()
        if self.embedder is not None and len(texts):
            # embed only the best lexical candidates: embedding every sentence costs seconds on 2 busy cores
            top = np.argsort(-lexical, kind="stable")[: self.embed_candidates]
            shown = [f"{contexts[i]}: {texts[i]}" if contexts[i] else texts[i] for i in top]
            vecs = embed_now(self.embedder, [question, *shown])
            scores[top] += self.embedding_weight * (vecs[1:] @ vecs[0])
            rest = np.setdiff1d(np.arange(len(texts)), top)
            scores[rest] -= 1.0
        return scores

    def answer(
        self, question: str, passages: list[tuple[int, str]], attrs: dict[int, tuple[str, str]],
        parts: dict[int, str] | None = None,
    ) -> str:
        """The composed answer text for a parsed prompt (``attrs``: passage number -> (title, section); ``parts``:
        passage number -> ``answer`` / ``alternative``, see :mod:`app.generation.prompt`). The unit is the passages
        marked ``answer`` (without marks: the leading passages of the first passage's section); passages marked
        ``alternative`` (a close runner-up section) add their best point, else one distinct point of the others
        may be added."""
        if not passages:
            return REFUSAL_TEXT
        parts = parts or {}
        first = attrs.get(passages[0][0], ("", ""))
        if parts.get(passages[0][0]) == "answer":
            lead = sum(1 for n, _ in passages if parts.get(n) == "answer")
        else:
            lead = 0
            while lead < len(passages) and attrs.get(passages[lead][0], ("", "")) == first:
                lead += 1
        section = {n: attrs.get(n, ("", ""))[1] for n, _ in passages}

        def unit_of(chosen: list[tuple[int, str]]) -> list[Passage]:
            texts = dedupe_overlaps([t for _, t in chosen], [section[n] for n, _ in chosen])
            return [Passage(n, t, section[n] or None) for (n, _), t in zip(chosen, texts, strict=True)]

        unit = unit_of(passages[:lead])
        alt = [(n, t) for n, t in passages[lead:] if parts.get(n) == "alternative"]
        others = [] if alt else [Passage(n, t, section[n] or None) for n, t in passages[lead:]]
        def ask_scorer(ask: str, texts: Sequence[str]) -> list[float]:
            return [float(x) for x in self.score(ask, texts)]

        own, context = split_context(question)
        if context:
            # a keyword-rewritten follow-up: the previous question's words found the section, the asker's own words
            # say which of its sentences answers ("when will there be a proper fix?": the fix, not the symptom)
            def scorer(texts: Sequence[str]) -> list[float]:
                mine, full = self.score(own, texts), self.score(question, texts)
                return [float(a + CONTEXT_SHARE * b) for a, b in zip(mine, full, strict=True)]
        else:
            def scorer(texts: Sequence[str]) -> list[float]:
                return ask_scorer(question, texts)
        composed = compose(question, unit, others, unit_label(*first), scorer=scorer, ask_scorer=ask_scorer)
        if composed is not None:
            extra = also_from(question, composed, unit_of(alt), unit_label(*attrs.get(alt[0][0], ("", ""))),
                              scorer=scorer) if alt else None
            if extra is None and "\n\nAlso" not in composed.text:
                # the spec or error-code row that the answer's heading or the question's code names
                row = named_row(composed, [Passage(n, t, section[n] or None) for n, t in passages],
                                constraint_terms(question, names=False))
                if row is not None:
                    n, text, where = row
                    extra = f"Also, from *{where}*: {cite(text, n)}" if where else f"Also: {cite(text, n)}"
            return composed.text + (f"\n\n{extra}" if extra else "")
        picked = self.select(question, passages, section)
        picked = [p for p in picked if p[2] >= self.min_score] or picked[:1]
        return " ".join(cite(s, n) for n, s, _ in picked) if picked else REFUSAL_TEXT

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncGenerator[str, None]:
        question, passages = parse_prompt(messages)
        tags = passage_tags(messages)
        attrs = {n: (t.title, t.section) for n, t in tags.items()}
        parts = {n: t.part for n, t in tags.items() if t.part}
        text = await asyncio.to_thread(self.answer, question, passages, attrs, parts)
        if stop:
            cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
            text = text[:cut] if cut >= 0 else text
        budget = max_tokens
        for piece in _PIECE.findall(text):
            budget -= self.count_tokens(piece)
            if budget < 0:
                return
            yield piece
            await asyncio.sleep(0)


def _pairs(terms: Sequence[str]) -> set[tuple[str, str]]:
    """Adjacent content-term pairs ("solid amber", "amber light")."""
    return set(zip(terms, terms[1:], strict=False))


def dedupe_overlaps(texts: Sequence[str], sections: Sequence[str]) -> list[str]:
    """Texts of consecutive chunks of one section with the overlap the chunker repeats at the start of each chunk
    removed (breadcrumb kept), so a list or a sentence is not quoted twice."""
    out: list[str] = []
    prev_body = ""
    for text, section in zip(texts, sections, strict=True):
        body = strip_breadcrumb(text, section or None)
        head = text[: len(text) - len(body)] if body and text.endswith(body) else ""
        first, _, rest = body.partition("\n\n")
        if rest and is_heading_line(first) and first.strip() == last_heading(prev_body):
            # the chunker names a subsection that goes on at the start of the next chunk: the same subsection
            rest = rest[overlap_length(prev_body, rest):].lstrip()
            out.append(head + rest)
        else:
            cut = overlap_length(prev_body, body)
            out.append(head + body[cut:].lstrip() if cut else text)
        prev_body = body
    return out
