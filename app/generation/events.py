"""Typed events of one answer stream. The API sends each as an SSE event named by its ``type``.

Order of a normal stream: ``meta``, (``degraded``), ``sources``, ``token``..., ``citations``, ``done``.
A failure mid-stream yields ``error`` and then ``done``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar


@dataclass(slots=True)
class _Event:
    type: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        body = asdict(self)
        body["type"] = self.type
        return body


@dataclass(slots=True)
class Meta(_Event):
    """First event. ``versions`` has keys chunker, embedder, prompt_template, model."""

    type: ClassVar[str] = "meta"
    request_id: str
    conversation_id: str
    message_id: str
    versions: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Sources(_Event):
    """Numbered passages given to the model: each {n, chunk_id, document_id, title, section_path, page_start,
    page_end, score, text}. ``n`` is the number used in ``[n]`` citation markers."""

    type: ClassVar[str] = "sources"
    sources: list[dict[str, Any]]


@dataclass(slots=True)
class Token(_Event):
    type: ClassVar[str] = "token"
    text: str


@dataclass(slots=True)
class Citations(_Event):
    """One entry per (sentence, cited source): {n, chunk_id, document_id, title, section, page_start, page_end,
    sentence, supported, support: {lexical, embedding}}."""

    type: ClassVar[str] = "citations"
    citations: list[dict[str, Any]]


@dataclass(slots=True)
class Degraded(_Event):
    """Something was skipped or replaced: retrieval stages (``vector``, ``graph``, ``rerank``) or ``llm_fallback``."""

    type: ClassVar[str] = "degraded"
    reasons: list[str]


@dataclass(slots=True)
class Done(_Event):
    """Last event, always sent. ``usage`` = {prompt_tokens, completion_tokens}. ``timings_ms``: milliseconds from the
    start of the answer to the end of each stage (rewrite, retrieve, sources, first_token, citations, total).
    ``retrieval_timings_ms``: how long each retrieval stage itself took (keyword, vector, graph for the configured
    retrievers, fuse, and within fuse hop2 / links when the second hop / title links ran, rerank when a reranker is
    set, total); empty when retrieval did not run. ``retrieval_degraded``:
    retrieval stages skipped because they failed or timed out (the ``degraded`` event's retrieval reasons).
    ``outcome``: answered, partial or not_found; ``missing``: what a partial answer leaves out, and ``unlinked`` those
    of them that the answering section names, but not where it answers (check that the answer applies to them)."""

    type: ClassVar[str] = "done"
    usage: dict[str, int]
    timings_ms: dict[str, float]
    refused: bool
    degraded: bool
    answer: str
    retrieval_timings_ms: dict[str, float] = field(default_factory=dict)
    retrieval_degraded: list[str] = field(default_factory=list)
    outcome: str = "answered"
    missing: list[str] = field(default_factory=list)
    unit: dict[str, Any] | None = None
    mode: str = "excerpt"
    unlinked: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Error(_Event):
    type: ClassVar[str] = "error"
    code: str
    message: str


Event = Meta | Sources | Token | Citations | Degraded | Done | Error
