"""Long PDFs parsed in page-range parts, each part its own isolated child, each finished part saved, so a job that is
retried after its worker died (killed, or its lease expired) reads only the pages no part holds yet.

A part is pages ``k * part_pages + 1 .. (k + 1) * part_pages``. The first child is asked for part 0 of any file: a PDF
answers with those pages and the document's page count (so no extra call counts pages); any other file is parsed
whole, as before. A part holds the pages' text lines, not elements: heading levels, the body font size and running
headers are facts of the whole document, so elements are made once from all parts (``pdf.assemble``) and the result
is the same as one parse of the whole file.

Saved parts (:class:`FilePartStore`) live in the file store next to the uploads (a local directory in embedded mode,
S3/MinIO in distributed mode, so a worker on another machine resumes them) under
``.parse-parts/<document>/<version>-<sha256>-<size>-p<part_pages>/``: a new version, other bytes, or another part size
never reuse them. The pipeline deletes a document's parts once it is indexed, fails for good, or is deleted.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from core.errors import AppError, ErrorCode
from core.filestore import FileStore
from ingestion.parsing.isolation import DEFAULT_TARGET, ParseOptions, run_isolated
from ingestion.parsing.model import ParsedDocument, parse_failed

log = logging.getLogger(__name__)

PART_TARGET = "ingestion.parsing.dispatch:parse_part_in_process"
#: Bump when :class:`pdf.PdfPart` or how its lines are read changes: parts saved by older code are then not reused.
PART_FORMAT = 1
PARTS_ROOT = ".parse-parts"  # a leading dot: no upload key (``<tenant>/..``, tenant stripped of dots) starts so


class PartStore(Protocol):
    """Where finished parts are kept between attempts of a job."""

    def load(self, index: int) -> Any:
        """Part ``index`` as saved (a ``PdfPart``), or None."""
        ...

    def save(self, index: int, part: Any) -> None: ...


@dataclass(slots=True)
class PartsProgress:
    """What a part-wise parse has done, for the job's stage notes."""

    parts_total: int
    parts_done: int = 0
    #: Parts read from the store (finished by an earlier attempt) and parts parsed by this one.
    parts_loaded: int = 0
    parts_parsed: int = 0
    #: The first page this attempt parsed when earlier parts were loaded; None when it started at page 1.
    resumed_from_page: int | None = None

    def notes(self) -> dict[str, int]:
        out = {"parts_done": self.parts_done, "parts_total": self.parts_total}
        if self.resumed_from_page is not None:
            out["resumed_from_page"] = self.resumed_from_page
        return out


def part_ranges(total: int, part_pages: int) -> list[tuple[int, int]]:
    """The (first, last) pages of each part of a ``total``-page document."""
    return [(first, min(first + part_pages - 1, total)) for first in range(1, total + 1, part_pages)]


RunPart = Callable[[ParseOptions, Callable[[int, int], None] | None], Any]


def parse_in_parts(
    path: Path,
    *,
    filename: str | None,
    part_pages: int,
    timeout_s: float,
    memory_mb: int,
    options: ParseOptions,
    store: PartStore | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    on_part: Callable[[PartsProgress], None] | None = None,
    run_part: RunPart | None = None,
) -> ParsedDocument:
    """Parse ``path``; a PDF of more than ``part_pages`` pages part by part (see the module; 0: always whole).
    ``store`` keeps finished parts across attempts; ``on_part`` sees the progress after each part (it may raise, e.g.
    ``LeaseLost``, to stop: the parts finished so far stay saved). ``run_part(options, on_progress)`` runs one part
    (default: an isolated child; unit tests pass a fake). ``options.max_total_s`` bounds this attempt's parts."""
    from ingestion.parsing.dispatch import finish
    from ingestion.parsing.pdf import PdfPart, assemble

    job = _PartwiseParse(path, filename, timeout_s, memory_mb, options, store, on_progress, run_part)
    if part_pages <= 0:
        whole = job.run(None)
        if not isinstance(whole, ParsedDocument):
            raise parse_failed("internal error: the parser returned a part of the document")
        return whole
    head = job.load(0, (1, part_pages), None)
    loaded_head = head is not None
    if head is None:
        head = job.run((1, part_pages))
        if isinstance(head, ParsedDocument):
            return head  # not a PDF: parsed whole
    if not isinstance(head, PdfPart):
        raise parse_failed("internal error: the parser returned no PDF part")
    ranges = part_ranges(head.total, part_pages)
    if len(ranges) <= 1:
        return finish(assemble([head]), job.name)
    progress = PartsProgress(parts_total=len(ranges))
    parts: list[PdfPart] = []
    for index, pages in enumerate(ranges):
        if index == 0:
            part = job.keep(0, pages, head, progress, loaded=loaded_head, total=head.total)
        else:
            part = job.next(index, pages, progress, total=head.total)
        parts.append(part)
        progress.parts_done = index + 1
        if progress.parts_parsed == 0 and on_progress is not None:
            on_progress(pages[1], head.total)  # loaded parts count as pages done
        if on_part is not None:
            on_part(progress)
    return finish(assemble(parts), job.name)


class _PartwiseParse:
    """The steps of :func:`parse_in_parts`: run a part (in a child, within what is left of ``max_total_s``), load a
    saved one (only if it is the part asked for), keep a finished one."""

    def __init__(
        self,
        path: Path,
        filename: str | None,
        timeout_s: float,
        memory_mb: int,
        options: ParseOptions,
        store: PartStore | None,
        on_progress: Callable[[int, int], None] | None,
        run_part: RunPart | None,
    ) -> None:
        self.path, self.filename, self.name = path, filename, filename or path.name
        self.timeout_s, self.memory_mb, self.options = timeout_s, memory_mb, options
        self.store, self.on_progress, self.run_part = store, on_progress, run_part
        self.started = time.monotonic()

    def run(self, pages: tuple[int, int] | None) -> Any:
        limit = self.options.max_total_s
        left = limit - (time.monotonic() - self.started)
        if left <= 0:
            raise parse_failed(f"parser timed out after {limit:g} s in all{f' at page {pages[0]}' if pages else ''}")
        opts = replace(self.options, pages=pages, max_total_s=left)
        if self.run_part is not None:
            return self.run_part(opts, self.on_progress)
        return run_isolated(
            PART_TARGET if pages else DEFAULT_TARGET, self.path, filename=self.filename, timeout_s=self.timeout_s,
            memory_mb=self.memory_mb, options=opts, on_progress=self.on_progress,
        )  # fmt: skip

    def load(self, index: int, pages: tuple[int, int], total: int | None) -> Any:
        from ingestion.parsing.pdf import PdfPart

        if self.store is None:
            return None
        try:
            part = self.store.load(index)
        except Exception:  # noqa: BLE001 - an unreadable saved part is parsed again
            log.warning("saved part %d of %s cannot be read; parsing it again", index, self.name, exc_info=True)
            return None
        if not isinstance(part, PdfPart) or (part.first, part.last) != (pages[0], min(pages[1], part.total)):
            return None
        if total is not None and part.total != total:
            return None
        return part

    def next(self, index: int, pages: tuple[int, int], progress: PartsProgress, *, total: int) -> Any:
        part = self.load(index, pages, total)
        if part is not None:
            progress.parts_loaded += 1
            return part
        if progress.resumed_from_page is None and progress.parts_loaded:
            progress.resumed_from_page = pages[0]
        return self.keep(index, pages, self.run(pages), progress, loaded=False, total=total)

    def keep(
        self, index: int, pages: tuple[int, int], part: Any, progress: PartsProgress, *, loaded: bool, total: int
    ) -> Any:
        from ingestion.parsing.pdf import PdfPart

        if loaded:
            progress.parts_loaded += 1
            return part
        if not isinstance(part, PdfPart) or (part.first, part.last, part.total) != (*pages, total):
            raise parse_failed(f"internal error: pages {pages[0]}-{pages[1]} came back as another part")
        progress.parts_parsed += 1
        if self.store is not None:
            self.store.save(index, part)
        return part


# --- saved parts in the file store ------------------------------------------------------------------------------------


def parts_prefix(document_id: str) -> str:
    """Where every saved part of ``document_id`` lives (all versions)."""
    return f"{PARTS_ROOT}/{_segment(document_id)}"


def _segment(value: str) -> str:
    safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in value)[:100].strip(".")
    return safe or "_"


def file_digest(path: Path) -> tuple[str, int]:
    """SHA-256 and size of the file being parsed."""
    h = hashlib.sha256()
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return h.hexdigest(), size


class FilePartStore:
    """Parts of one version of one document, as gzipped JSON objects in a :class:`FileStore` (JSON rather than pickle:
    nothing read back from shared storage can run code)."""

    def __init__(
        self, files: FileStore, *, document_id: str, version: int, digest: str, size: int, part_pages: int
    ) -> None:
        self.files = files
        self.prefix = (
            f"{parts_prefix(document_id)}/v{int(version)}-{digest[:32]}-{int(size)}-p{int(part_pages)}-f{PART_FORMAT}"
        )

    def _key(self, index: int) -> str:
        return f"{self.prefix}/part-{index:05d}.json.gz"

    def load(self, index: int) -> Any:
        from ingestion.parsing.pdf import PdfPart

        try:
            raw = self.files.get(self._key(index))
        except AppError as exc:
            if exc.code is ErrorCode.NOT_FOUND:
                return None
            raise
        return PdfPart.from_json(json.loads(gzip.decompress(raw)))

    def save(self, index: int, part: Any) -> None:
        data = gzip.compress(json.dumps(part.to_json(), separators=(",", ":")).encode(), compresslevel=5)
        try:
            self.files.put(self._key(index), data)
        except AppError as exc:  # a part that cannot be saved is only parsed again after a crash
            log.warning("could not save parsed part %d (%s); a retry would parse it again", index, exc.message)


def delete_parts(files: FileStore, document_id: str) -> None:
    """Remove every saved part of ``document_id`` (best effort: a store that fails is logged, not raised)."""
    try:
        files.delete_prefix(parts_prefix(document_id))
    except Exception:  # noqa: BLE001 - cleanup must not fail the job or the deletion
        log.warning("could not delete the saved parse parts of document %s", document_id, exc_info=True)
