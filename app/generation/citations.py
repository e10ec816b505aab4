"""Citation markers: an incremental parser for streamed text and a per-sentence support check.

Markers are ``[n]``, ``[n, m]`` and ``[n][m]``. The parser holds back a possible marker until it is complete (a marker
may arrive as ``"["`` + ``"1"`` + ``"]"``), rewrites it to keep only numbers that point at a source, and drops it
entirely when none does, so the streamed text never shows a dangling citation.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import numpy as np

from app.generation.text import content_terms, overlap, split_sentences
from retrieval.embedders import embed_now
from retrieval.protocols import Embedder

MARKER = re.compile(r"\[(\s*\d+(?:\s*,\s*\d+)*\s*)\]")
_REWRITE = re.compile(r"( ?)\[(\s*\d+(?:\s*,\s*\d+)*\s*)\]")
_PARTIAL = re.compile(r"\[[\d,\s]*$")
_MAX_MARKER = 24

#: A cited sentence is supported when either signal reaches its threshold.
LEXICAL_SUPPORT = 0.5
EMBEDDING_SUPPORT = 0.55


class CitationStream:
    """Feed streamed pieces; get back text safe to show, with unknown citation numbers removed."""

    def __init__(self, valid: Sequence[int]) -> None:
        self.valid = set(valid)
        self._pending = ""
        self.text = ""  # everything emitted so far
        self.dropped: list[int] = []

    def feed(self, piece: str) -> str:
        buf = self._pending + piece
        m = _PARTIAL.search(buf)
        if m and len(buf) - m.start() <= _MAX_MARKER:
            self._pending, buf = buf[m.start():], buf[: m.start()]
        else:
            self._pending = ""
        out = _REWRITE.sub(self._rewrite, buf)
        self.text += out
        return out

    def flush(self) -> str:
        out = _REWRITE.sub(self._rewrite, self._pending)
        self._pending = ""
        self.text += out
        return out

    def _rewrite(self, m: re.Match[str]) -> str:
        nums = [int(x) for x in m.group(2).split(",")]
        keep = [n for n in nums if n in self.valid]
        self.dropped += [n for n in nums if n not in self.valid]
        return m.group(1) + "[" + ", ".join(str(n) for n in keep) + "]" if keep else ""


def cited_sentences(answer: str) -> list[tuple[str, list[int]]]:
    """Split an answer into sentences with the numbers each cites; markers at the start of a sentence belong to
    the previous one (``"... big. [1] Next"``)."""
    out: list[tuple[str, list[int]]] = []
    for sent in split_sentences(answer):
        lead = re.match(r"^(\s*\[[\d,\s]+\]\s*)+", sent)
        if lead and out:
            out[-1][1].extend(_numbers(lead.group(0)))
            sent = sent[lead.end():]
        if sent.strip():
            out.append((sent.strip(), _numbers(sent)))
    return out


def _numbers(text: str) -> list[int]:
    nums: list[int] = []
    for m in MARKER.finditer(text):
        nums += [int(x) for x in m.group(1).split(",") if int(x) not in nums]
    return nums


def check_support(
    answer: str, sources: Sequence[dict[str, Any]], embedder: Embedder | None = None
) -> list[dict[str, Any]]:
    """One entry per (sentence, cited source) with lexical and embedding support against the cited passage.

    ``sources`` are the dicts of the Sources event. Lexical support is the share of the sentence's content terms found
    in the passage; embedding support is the cosine of the two embeddings (0 when there is no embedder)."""
    by_n = {s["n"]: s for s in sources}
    pairs = [(sent, n) for sent, nums in cited_sentences(answer) for n in nums if n in by_n]
    if not pairs:
        return []
    cos = [0.0] * len(pairs)
    if embedder is not None:
        clean = [MARKER.sub("", s) for s, _ in pairs]
        sv = embed_now(embedder, clean)
        pv = embed_now(embedder, [by_n[n]["text"] for _, n in pairs])
        cos = [float(x) for x in np.sum(sv * pv, axis=1)]
    out = []
    for (sent, n), emb in zip(pairs, cos, strict=True):
        src = by_n[n]
        lex = overlap(content_terms(MARKER.sub("", sent)), content_terms(src["text"]))
        supported = lex >= LEXICAL_SUPPORT or (embedder is not None and emb >= EMBEDDING_SUPPORT)
        out.append({
            "n": n, "chunk_id": src["chunk_id"], "document_id": src["document_id"], "title": src["title"],
            "section": " > ".join(src.get("section_path") or []), "page_start": src.get("page_start"),
            "page_end": src.get("page_end"), "sentence": sent, "supported": supported,
            "support": {"lexical": round(lex, 4), "embedding": round(emb, 4)},
        })
    return out
