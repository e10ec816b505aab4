"""The originals behind citations: a document's stored file, served safely, and the section around a cited passage.

Both apply the tenant and ACL-group checks of the rest of the documents API: a document of another tenant, or outside
the caller's groups, is the same 404 as one that does not exist.

Serving user-uploaded files from our own origin is a stored-XSS risk, so the media type is chosen from an allowlist:
PDFs (when the bytes really are a PDF) and common raster images keep their type, office files keep theirs (browsers
download them), every text format -- HTML, SVG, XML and Markdown included -- is sent as ``text/plain``, and anything
else as ``application/octet-stream``. The route adds ``nosniff`` and a sandboxing CSP so nothing is ever run.
"""

from __future__ import annotations

import mimetypes
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import quote

from pydantic import BaseModel, Field
from sqlalchemy import select

from app.generation.text import is_heading_line, last_heading, overlap_length
from core.db import repositories as repo
from core.db.models import Chunk
from core.db.session import Database
from core.errors import AppError, ErrorCode
from core.filestore import FileStore

PDF = "application/pdf"
TEXT = "text/plain; charset=utf-8"
BINARY = "application/octet-stream"

#: Types a browser shows without running anything (SVG is not here: it can carry script).
_SAFE_AS_IS = frozenset({
    "image/png", "image/jpeg", "image/gif", "image/webp", "image/tiff", "image/bmp",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "application/msword", "application/vnd.ms-powerpoint", "application/vnd.ms-excel",
    "application/vnd.oasis.opendocument.text",
})
#: Text formats sent as text/plain (shown as source, never rendered or run).
_TEXT_TYPES = frozenset({
    "application/xhtml+xml", "application/xml", "application/json", "application/javascript", "image/svg+xml",
    "application/rtf",
})
_TEXT_DOC_TYPES = frozenset({"html", "markdown", "text", "csv", "txt", "md"})

#: Neighbouring passages of the same section joined into one section view, on each side of the cited one.
SECTION_NEIGHBOURS = 12
#: A section view stops growing past this many characters (the cited passage is always whole).
SECTION_MAX_CHARS = 40_000
#: The shortest run counted as the overlap the chunker repeats between neighbouring passages.
_MIN_OVERLAP = 12


@dataclass(frozen=True, slots=True)
class Original:
    data: bytes
    media_type: str
    filename: str
    document_version: int

    @property
    def content_disposition(self) -> str:
        return inline_disposition(self.filename)


class SectionView(BaseModel):
    """The stored text of the section a passage belongs to; ``text[highlight_start:highlight_end]`` is the passage."""

    chunk_id: str
    document_id: str
    document_version: int
    title: str
    doc_type: str
    section_path: list[str]
    page_start: int | None
    page_end: int | None
    text: str
    highlight_start: int = Field(ge=0)
    highlight_end: int = Field(ge=0)
    truncated: bool = Field(description="neighbouring passages of the section were left off to keep the answer short")


def inline_disposition(filename: str) -> str:
    """``inline`` with an ASCII-only quoted name (no quotes, slashes or control characters) and the full name as
    RFC 5987 ``filename*``."""
    name = filename.replace("\\", "/").rsplit("/", 1)[-1].strip() or "document"
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()
    ascii_name = re.sub(r"[^A-Za-z0-9._ ()-]", "_", ascii_name).strip(" .") or "document"
    return f"inline; filename=\"{ascii_name[:150]}\"; filename*=UTF-8''{quote(name[:200], safe='')}"


def media_type_for(*, filename: str, mime_type: str, doc_type: str, head: bytes) -> str:
    """The type to serve a stored original as (see the module docstring); ``head`` is the file's first bytes."""
    declared = (mime_type or mimetypes.guess_type(filename)[0] or "").split(";")[0].strip().lower()
    if declared == PDF or doc_type == "pdf":
        return PDF if head.startswith(b"%PDF-") else BINARY
    if declared in _SAFE_AS_IS:
        return declared
    if declared.startswith("text/") or declared in _TEXT_TYPES or doc_type in _TEXT_DOC_TYPES:
        return TEXT
    return BINARY


def open_original(
    *, db: Database, files: FileStore, tenant_id: str, document_id: str, acl_scope: Sequence[str] | None
) -> Original:
    """The stored file of a document the caller may read; 404 when the document is not theirs or the file is gone."""
    with db.session() as s:
        doc = repo.get_document(session=s, tenant_id=tenant_id, document_id=document_id, acl_groups=acl_scope)
        storage, filename, mime, doc_type, version = (
            doc.storage_path, doc.filename, doc.mime_type, doc.doc_type, doc.version,
        )
    missing = AppError(ErrorCode.NOT_FOUND, f"the original file of document {document_id} is not stored")
    if not storage:
        raise missing
    try:  # the file store refuses keys outside it (an old row's absolute path outside the upload folder, say)
        data = files.get(storage)
    except AppError as exc:
        if exc.code in (ErrorCode.NOT_FOUND, ErrorCode.VALIDATION):
            raise missing from None
        raise
    return Original(
        data=data,
        media_type=media_type_for(filename=filename, mime_type=mime, doc_type=doc_type, head=data[:8]),
        filename=filename,
        document_version=version,
    )


def section_of_chunk(
    *, db: Database, tenant_id: str, chunk_id: str, acl_scope: Sequence[str] | None
) -> SectionView:
    """The stored text of the section a passage belongs to (its neighbouring passages with the same section path, the
    chunker's overlap removed) and where the passage lies in it."""
    with db.session() as s:
        row = s.get(Chunk, chunk_id)
        if row is None or row.tenant_id != tenant_id:
            raise AppError(ErrorCode.NOT_FOUND, "passage not found")
        try:
            doc = repo.get_document(session=s, tenant_id=tenant_id, document_id=row.document_id, acl_groups=acl_scope)
        except AppError:
            raise AppError(ErrorCode.NOT_FOUND, "passage not found") from None
        nearby = list(s.scalars(
            select(Chunk)
            .where(
                Chunk.document_id == row.document_id,
                Chunk.document_version == row.document_version,
                Chunk.order >= row.order - SECTION_NEIGHBOURS - 1,  # one more each side: is the section longer?
                Chunk.order <= row.order + SECTION_NEIGHBOURS + 1,
            )
            .order_by(Chunk.order)
        ))
        path = list(row.section_path or [])
        texts, cited_at, cut = _contiguous_section(nearby, row.order, path)
        text, start, end, truncated = join_passages(texts, cited_at)
        truncated = truncated or cut
        return SectionView(
            chunk_id=row.id, document_id=doc.id, document_version=row.document_version, title=doc.title or doc.filename,
            doc_type=doc.doc_type, section_path=path, page_start=row.page_start, page_end=row.page_end,
            text=text, highlight_start=start, highlight_end=end, truncated=truncated,
        )


def _contiguous_section(rows: list[Chunk], order: int, path: list[str]) -> tuple[list[str], int, bool]:
    """Texts of the unbroken run of ``rows`` around ``order`` whose section path is ``path`` (at most
    ``SECTION_NEIGHBOURS`` on each side), the index of the cited one, and whether the run went on past that limit."""

    def joins(a: Chunk, b: Chunk) -> bool:  # b directly follows a, both in the section
        return list(a.section_path or []) == path == list(b.section_path or []) and b.order == a.order + 1

    at = next(i for i, r in enumerate(rows) if r.order == order)
    lo = at
    while lo > 0 and joins(rows[lo - 1], rows[lo]):
        lo -= 1
    hi = at
    while hi + 1 < len(rows) and joins(rows[hi], rows[hi + 1]):
        hi += 1
    cut = at - lo > SECTION_NEIGHBOURS or hi - at > SECTION_NEIGHBOURS
    lo, hi = max(lo, at - SECTION_NEIGHBOURS), min(hi, at + SECTION_NEIGHBOURS)
    return [r.text for r in rows[lo: hi + 1]], at - lo, cut


#: A heading path or heading line of the section view has at most this many words (breadcrumbs are longer than the
#: headings the answer composer reads).
_HEADING_WORDS = 16


def _breadcrumb(text: str) -> str:
    """The chunker's heading path that opens ``text`` ("Guide > Reset"), or ""."""
    first, sep, _ = text.partition("\n\n")
    return first if sep and is_heading_line(first, _HEADING_WORDS) else ""


def _continued(piece: str, crumb: str, heading: str) -> str:
    """A passage that continues the joined text, without the heading path every passage of the section opens with and
    without the subsection heading the chunker repeats at the start of a passage that goes on ("Factory reset of the
    Hub" once, not before each of its passages)."""
    first, sep, rest = piece.partition("\n\n")
    if sep and crumb and first == crumb:
        piece = rest
        first, sep, rest = piece.partition("\n\n")
    if sep and heading and first.strip() == heading:
        piece = rest
    return piece


def join_passages(texts: Sequence[str], cited: int, max_chars: int = SECTION_MAX_CHARS) -> tuple[str, int, int, bool]:
    """Join neighbouring passages into one text, dropping what the chunker repeats between them (the heading path each
    passage opens with, a subsection heading repeated where it goes on, the overlap); returns the text, the start and
    end offsets of passage ``cited`` in it (its text after those repeats), and whether passages were left off to stay
    within ``max_chars`` (passages nearest the cited one are kept first)."""
    lo, hi = cited, cited
    size = len(texts[cited])
    while True:
        grew = False
        if lo > 0 and size + len(texts[lo - 1]) <= max_chars:
            lo, size, grew = lo - 1, size + len(texts[lo - 1]), True
        if hi + 1 < len(texts) and size + len(texts[hi + 1]) <= max_chars:
            hi, size, grew = hi + 1, size + len(texts[hi + 1]), True
        if not grew:
            break
    out = ""
    start = end = 0
    crumb = _breadcrumb(texts[lo])
    for i in range(lo, hi + 1):
        piece = texts[i] if i == lo else _continued(texts[i], crumb, last_heading(out, _HEADING_WORDS))
        if i == cited:
            # the cited passage stays whole: the previous text gives up the overlap instead
            k = overlap_length(out, piece, _MIN_OVERLAP) if out else 0
            out = out[: len(out) - k]
            out = out + ("\n\n" if out and k == 0 else "")
            start = len(out)
            out += piece
            end = len(out)
            continue
        k = overlap_length(out, piece, _MIN_OVERLAP) if out else 0
        out += ("\n\n" if out and k == 0 else "") + piece[k:]
    return out, start, end, lo > 0 or hi < len(texts) - 1
