"""Domain types shared by every layer.

These are plain dataclasses: no database, no framework. Index backends, the ingest pipeline and the answer service
all speak in these types, so a new backend can be written against this module alone.
"""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


class DocumentStatus(str, enum.Enum):
    """Lifecycle of an uploaded document. Every document ends ``indexed`` or ``failed``."""

    QUEUED = "queued"
    PARSING = "parsing"
    CHUNKING = "chunking"
    EMBEDDING = "embedding"
    INDEXING = "indexing"
    INDEXED = "indexed"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (DocumentStatus.INDEXED, DocumentStatus.FAILED)

    @property
    def is_stage(self) -> bool:
        return self in STAGES


#: Pipeline stages in order; a job's per-stage state is keyed by their values. A job's own status takes the same
#: values as its document's (the document mirrors its latest job), so jobs need no enum of their own.
STAGES: tuple[DocumentStatus, ...] = (
    DocumentStatus.PARSING,
    DocumentStatus.CHUNKING,
    DocumentStatus.EMBEDDING,
    DocumentStatus.INDEXING,
)

#: The terminal statuses, as stored (for queries).
TERMINAL_STATUSES: tuple[str, ...] = tuple(s.value for s in DocumentStatus if s.terminal)


class StageStatus(str, enum.Enum):
    """State of one stage inside a job's ``stages`` entry."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"


class Role(str, enum.Enum):
    """API roles, from most to least privileged."""

    ADMIN = "admin"
    EDITOR = "editor"
    AGENT = "agent"

    def allows(self, needed: Role) -> bool:
        order = [Role.AGENT, Role.EDITOR, Role.ADMIN]
        return order.index(self) >= order.index(needed)


@dataclass(frozen=True, slots=True)
class Actor:
    """Who did something, as recorded in usage and the audit log: an API key, a user, or the system itself."""

    kind: str  # "key" | "user" | "system"
    id: str | None
    name: str


SYSTEM_ACTOR = Actor(kind="system", id=None, name="system")


def content_hash(*parts: str | bytes) -> str:
    """Stable sha256 hex digest of the given parts (used for document and chunk ids)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8") if isinstance(p, str) else p)
        h.update(b"\x1f")
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Element:
    """One structural element produced by a parser, before chunking.

    ``kind`` is one of: title, text, list_item, table, code, page_break (parsers may add others).
    ``level`` is the heading depth for titles (1 = top). ``text`` of a table is Markdown (header row, separator, rows).
    """

    kind: str
    text: str
    level: int = 0
    page: int | None = None
    section_path: tuple[str, ...] = ()
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ChunkRecord:
    """A retrievable unit of text with everything needed to filter it, cite it and trace it to its source.

    ``id`` is a content hash over (tenant, document, version, order, text): re-ingesting the same content gives the
    same ids, so indexing is idempotent.
    """

    id: str
    tenant_id: str
    document_id: str
    document_version: int
    title: str
    text: str
    section_path: tuple[str, ...] = ()
    page_start: int | None = None
    page_end: int | None = None
    order: int = 0
    element_types: tuple[str, ...] = ()
    token_count: int = 0
    chunker_version: str = ""
    acl_groups: tuple[str, ...] = ()
    doc_type: str = ""
    tags: tuple[str, ...] = ()
    created_at: dt.datetime | None = None

    @property
    def section(self) -> str:
        return " > ".join(self.section_path)

    @staticmethod
    def make_id(tenant_id: str, document_id: str, version: int, order: int, text: str) -> str:
        return content_hash(tenant_id, document_id, str(version), str(order), text)[:32]


class FilterFields(Protocol):
    """What a filter reads: a :class:`ChunkRecord`, or a slimmer record an index keeps per chunk."""

    @property
    def tenant_id(self) -> str: ...
    @property
    def document_id(self) -> str: ...
    @property
    def acl_groups(self) -> tuple[str, ...]: ...
    @property
    def doc_type(self) -> str: ...
    @property
    def tags(self) -> tuple[str, ...]: ...
    @property
    def created_at(self) -> dt.datetime | None: ...


#: ACL group and tag values: 1 to 64 letters, digits, spaces and ``. _ - : @ /`` (no commas, quotes or control
#: characters), at most ``MAX_LABELS`` per document, key or user.
LABEL_MAX_CHARS = 64
MAX_LABELS = 50
_LABEL = re.compile(r"^[\w.:@/ -]+$")


def clean_labels(values: Sequence[str], what: str) -> list[str]:
    """Trimmed, de-duplicated, sorted ACL groups or tags; ValueError naming ``what`` for a value out of bounds."""
    out = sorted({v.strip() for v in values if v.strip()})
    if len(out) > MAX_LABELS:
        raise ValueError(f"at most {MAX_LABELS} {what}")
    for v in out:
        if len(v) > LABEL_MAX_CHARS:
            raise ValueError(f"{what} are at most {LABEL_MAX_CHARS} characters: {v[:20]!r}...")
        if not _LABEL.match(v):
            raise ValueError(f"{what} may hold only letters, digits, spaces and . _ - : @ /: {v!r} does not")
    return out


def acl_allows(document_groups: Sequence[str] | None, caller_groups: Sequence[str] | None) -> bool:
    """Whether a caller with ``caller_groups`` (``None``: unrestricted, a tenant admin) may see a document or chunk
    limited to ``document_groups`` (empty: every caller of the tenant)."""
    return caller_groups is None or not document_groups or bool(set(document_groups) & set(caller_groups))


@dataclass(frozen=True, slots=True)
class SearchFilter:
    """Filters every index must apply *inside* the index (never post-filtered by the caller).

    - ``tenant_id``: always required; a chunk of another tenant is never returned.
    - ``acl_groups``: the caller's groups. A chunk with no ``acl_groups`` is visible to every caller of its tenant; a
      chunk with groups is visible only when it shares at least one group with the caller. ``None`` means the caller
      is unrestricted (tenant admin); an empty tuple means the caller belongs to no group.
    - ``doc_types`` / ``tags``: match any of the given values; empty means no restriction.
    - ``created_from`` / ``created_to``: inclusive bounds on the document's creation time.
    - ``document_ids``: restrict to these documents; empty means no restriction.
    """

    tenant_id: str
    acl_groups: tuple[str, ...] | None = None
    doc_types: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    created_from: dt.datetime | None = None
    created_to: dt.datetime | None = None
    document_ids: tuple[str, ...] = ()

    def admits(self, chunk: FilterFields) -> bool:
        """Reference semantics of the filter, used by backends that filter in Python and by the contract tests."""
        if chunk.tenant_id != self.tenant_id:
            return False
        if not acl_allows(chunk.acl_groups, self.acl_groups):
            return False
        if self.doc_types and chunk.doc_type not in self.doc_types:
            return False
        if self.tags and not set(chunk.tags) & set(self.tags):
            return False
        if self.document_ids and chunk.document_id not in self.document_ids:
            return False
        if self.created_from and (chunk.created_at is None or chunk.created_at < self.created_from):
            return False
        if self.created_to and (chunk.created_at is None or chunk.created_at > self.created_to):
            return False
        return True


@dataclass(frozen=True, slots=True)
class Hit:
    """One result of one retriever: a chunk id and that retriever's score (higher is better)."""

    chunk_id: str
    score: float


@dataclass(slots=True)
class RankedChunk:
    """A fused (and possibly reranked) result, carrying the per-retriever scores for debugging."""

    chunk: ChunkRecord
    score: float
    scores: dict[str, float] = field(default_factory=dict)
    ranks: dict[str, int] = field(default_factory=dict)
