"""No-LLM backend: query-focused sentence selection from the prompt's passages, with ``[n]`` citations.

It reads the question and passages back from the prompt (:func:`app.generation.prompt.parse_prompt`), cuts each
passage into candidate sentences (:func:`app.generation.text.answer_units`: the heading breadcrumb line is dropped,
a markdown table becomes one "row — header: cell" sentence per data row), scores every candidate by idf-weighted
query-term overlap (BM25-like, idf over the candidates) plus, when an embedder is given, the cosine between question
and candidate embeddings, and streams the best candidates in small pieces. A candidate after the first is kept only
when it is nearly as good as the best one and shares a content term with the question. Always available, so it is
also the fallback when the LLM is down.
"""

from __future__ import annotations

import asyncio
import html
import math
import re
from collections import Counter
from collections.abc import AsyncGenerator

import numpy as np

from app.generation.prompt import REFUSAL_TEXT, parse_prompt
from app.generation.text import ABBREVIATION, answer_units_in_context, content_terms, estimate_tokens
from retrieval.protocols import Embedder

_PIECE = re.compile(r"\S+\s*")
_SECTION = re.compile(r'<passage id="(\d+)"[^>]*?\ssection="([^"]*)"')


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
    ) -> None:
        self.embedder = embedder
        self.max_sentences = max_sentences
        self.context_window = context_window
        self.embedding_weight = embedding_weight
        self.min_score = min_score
        self.embed_candidates = embed_candidates
        self.secondary_ratio = secondary_ratio
        self.context_weight = context_weight

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
        # the heading, FAQ question or "...:" line above a candidate counts, at a lower weight, for its terms
        ctx_terms = [set(content_terms(c)) - own for (_, _, c), own in zip(cands, sent_terms, strict=True)]
        df = Counter(t for terms in sent_terms for t in terms)
        n_docs = len(cands)
        idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
        norm = sum(idf.values()) or 1.0
        lexical = np.array(
            [
                (sum(idf[t] for t in q_terms & own) + self.context_weight * sum(idf[t] for t in q_terms & ctx)) / norm
                for own, ctx in zip(sent_terms, ctx_terms, strict=True)
            ],
            dtype=np.float32,
        )
        scores = lexical.copy()
        if self.embedder is not None:
            # embed only the best lexical candidates: embedding every sentence costs seconds on 2 busy cores
            top = np.argsort(-lexical, kind="stable")[: self.embed_candidates]
            texts = [f"{cands[i][2]}: {cands[i][1]}" if cands[i][2] else cands[i][1] for i in top]
            vecs = self.embedder.embed_documents([question, *texts])
            scores[top] += self.embedding_weight * (vecs[1:] @ vecs[0])
            rest = np.setdiff1d(np.arange(len(cands)), top)
            scores[rest] -= 1.0  # never preferred over an embedded candidate
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

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncGenerator[str, None]:
        question, passages = parse_prompt(messages)
        picked = await asyncio.to_thread(self.select, question, passages, _sections(messages))
        picked = [p for p in picked if p[2] >= self.min_score] or picked[:1]
        text = " ".join(_cite(s, n) for n, s, _ in picked) if picked else REFUSAL_TEXT
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


def _sections(messages: list[dict[str, str]]) -> dict[int, str]:
    """Passage number -> the ``section`` attribute of its tag in the last user message (the chunk's breadcrumb)."""
    user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return {int(m.group(1)): html.unescape(m.group(2)) for m in _SECTION.finditer(user)}


def _cite(sentence: str, n: int) -> str:
    """``"Paris is big."`` -> ``"Paris is big [1]."`` (the marker stays inside its sentence)."""
    s = sentence.rstrip()
    if ABBREVIATION.search(s):  # "until 5:00 p.m." keeps its abbreviation dot
        return f"{s} [{n}]"
    if s and s[-1] in ".!?":
        return f"{s[:-1]} [{n}]{s[-1]}"
    return f"{s} [{n}]."
