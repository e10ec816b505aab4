"""No-LLM backend: query-focused sentence selection from the prompt's passages, with ``[n]`` citations.

It reads the question and passages back from the prompt (:func:`app.generation.prompt.parse_prompt`), scores every
sentence by idf-weighted query-term overlap (BM25-like, idf over the given passages) plus, when an embedder is given,
the cosine between question and sentence embeddings, and streams the best sentences in small pieces. Always
available, so it is also the fallback when the LLM is down.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections import Counter
from collections.abc import AsyncGenerator

import numpy as np

from app.generation.prompt import REFUSAL_TEXT, parse_prompt
from app.generation.text import content_terms, estimate_tokens, split_sentences
from retrieval.protocols import Embedder

_PIECE = re.compile(r"\S+\s*")


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
    ) -> None:
        self.embedder = embedder
        self.max_sentences = max_sentences
        self.context_window = context_window
        self.embedding_weight = embedding_weight
        self.min_score = min_score
        self.embed_candidates = embed_candidates

    def count_tokens(self, text: str) -> int:
        return estimate_tokens(text)

    def select(self, question: str, passages: list[tuple[int, str]]) -> list[tuple[int, str, float]]:
        """Best sentences as (passage number, sentence, score), best first."""
        cands = [(n, s) for n, text in passages for s in split_sentences(text)]
        if not cands:
            return []
        q_terms = set(content_terms(question))
        sent_terms = [set(content_terms(s)) for _, s in cands]
        df = Counter(t for terms in sent_terms for t in terms)
        n_docs = len(cands)
        idf = {t: math.log(1 + (n_docs - df[t] + 0.5) / (df[t] + 0.5)) for t in q_terms}
        norm = sum(idf.values()) or 1.0
        lexical = np.array([sum(idf[t] for t in q_terms & terms) / norm for terms in sent_terms], dtype=np.float32)
        scores = lexical.copy()
        if self.embedder is not None:
            # embed only the best lexical candidates: embedding every sentence costs seconds on 2 busy cores
            top = np.argsort(-lexical, kind="stable")[: self.embed_candidates]
            vecs = self.embedder.embed_documents([question, *(cands[i][1] for i in top)])
            scores[top] += self.embedding_weight * (vecs[1:] @ vecs[0])
            rest = np.setdiff1d(np.arange(len(cands)), top)
            scores[rest] -= 1.0  # never preferred over an embedded candidate
        # a small prior for higher-ranked passages breaks ties toward the retriever's order
        scores = scores - 0.01 * np.array([n for n, _ in cands], dtype=np.float32)
        order = np.argsort(-scores, kind="stable")
        return [(cands[i][0], cands[i][1], float(scores[i])) for i in order[: self.max_sentences]]

    async def stream(
        self, messages: list[dict[str, str]], *, max_tokens: int, stop: list[str] | None, temperature: float
    ) -> AsyncGenerator[str, None]:
        question, passages = parse_prompt(messages)
        picked = await asyncio.to_thread(self.select, question, passages)
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


def _cite(sentence: str, n: int) -> str:
    """``"Paris is big."`` -> ``"Paris is big [1]."`` (the marker stays inside its sentence)."""
    s = sentence.rstrip()
    if s and s[-1] in ".!?":
        return f"{s[:-1]} [{n}]{s[-1]}"
    return f"{s} [{n}]."
