"""Office Open XML: DOCX (python-docx), PPTX (python-pptx), XLSX (openpyxl)."""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from ingestion.parsing.detect import MIME
from ingestion.parsing.model import (
    MAX_TABLE_ROWS,
    ElementBuilder,
    ParsedDocument,
    header_rows,
    metadata_title,
    parse_failed,
    tidy_figures,
)

_HEADING_STYLE = re.compile(r"^heading\s*(\d)", re.I)
_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"


def _check_zip(data: bytes, label: str) -> zipfile.ZipFile:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        bad = zf.testzip()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        raise parse_failed(f"corrupt {label}: not a valid zip archive") from None
    except Exception:  # noqa: BLE001 - zlib errors while testing members
        raise parse_failed(f"corrupt {label}: damaged zip archive") from None
    if bad is not None:
        raise parse_failed(f"corrupt {label}: damaged member {bad}")
    return zf


def _xml_fallback(zf: zipfile.ZipFile, prefix: str, doc_type: str, label: str, reason: str) -> ParsedDocument:
    """Last resort for files the object model rejects (e.g. ISO Strict OOXML): paragraphs of raw XML text."""
    from lxml import etree

    builder = ElementBuilder()
    parts = sorted(
        (n for n in zf.namelist() if n.startswith(prefix) and n.endswith(".xml")),
        key=lambda n: [int(d) if d.isdigit() else d for d in re.split(r"(\d+)", n)],
    )
    for name in parts:
        try:
            root = etree.fromstring(zf.read(name))
        except etree.XMLSyntaxError:
            continue
        for p in root.iter("{*}p"):
            builder.add("text", "".join(t.text or "" for t in p.iter("{*}t")))
    if not builder.elements:
        raise parse_failed(f"corrupt {label}: {reason}")
    return ParsedDocument(
        title="",
        mime_type=MIME[doc_type],
        doc_type=doc_type,
        elements=builder.elements,
        warnings=[f"{label} read as plain text only ({reason})"],
    )


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]


def _docx_level(paragraph: Any) -> int:
    name = (paragraph.style.name if paragraph.style is not None else "") or ""
    if name.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(name)
    if m:
        return int(m.group(1))
    ppr = paragraph._p.pPr
    if ppr is not None:
        lvl = ppr.find(f"{_W}outlineLvl")
        if lvl is not None and (val := lvl.get(f"{_W}val", "")).isdigit() and int(val) < 9:
            return int(val) + 1
    return 0


def _page_breaks(p_el: Any) -> tuple[int, int]:
    """(breaks before the paragraph, explicit page breaks inside it)."""
    ppr = p_el.find(f"{_W}pPr")
    before = 1 if ppr is not None and ppr.find(f"{_W}pageBreakBefore") is not None else 0
    inside = sum(1 for br in p_el.iter(f"{_W}br") if br.get(f"{_W}type") == "page")
    return before, inside


def parse_docx(data: bytes) -> ParsedDocument:
    import docx

    zf = _check_zip(data, "DOCX")
    try:
        document = docx.Document(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001 - python-docx raises KeyError/ValueError/lxml errors for odd files
        return _xml_fallback(zf, "word/document", "docx", "DOCX", _short(exc))
    try:
        return _docx_elements(document)
    except Exception as exc:  # noqa: BLE001 - malformed tables/grids: fall back to the raw text
        return _xml_fallback(zf, "word/document", "docx", "DOCX", _short(exc))


def _docx_elements(document: Any) -> ParsedDocument:
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    body = document.element.body
    has_pages = any(sum(_page_breaks(p)) for p in body.iter(f"{_W}p"))
    page: int | None = 1 if has_pages else None
    builder = ElementBuilder()
    number = 0  # the item number within a run of "List Number" paragraphs
    for child in body.iterchildren():
        if child.tag == f"{_W}p":
            para = Paragraph(child, document)
            before, inside = _page_breaks(child)
            if page is not None:
                page += before
            level = _docx_level(para)
            style = (para.style.name if para.style is not None else "") or ""
            if level:
                number = 0
                builder.title(para.text, level, page=page)
            elif "list" in style.lower() or child.find(f"{_W}pPr/{_W}numPr") is not None:
                number = number + 1 if "number" in style.lower() else 0
                builder.add("list_item", para.text, page=page, marker=f"{number}." if number else "-")
            else:
                number = 0
                builder.add(
                    "code" if "code" in style.lower() else "text",
                    para.text,
                    page=page,
                    keep_layout="code" in style.lower(),
                )
            if page is not None:
                page += inside
        elif child.tag == f"{_W}tbl":
            table = Table(child, document)
            builder.table(_docx_grid(table), page=page)
    props = document.core_properties
    return ParsedDocument(
        title=metadata_title(props.title) or builder.first_title(),
        mime_type=MIME["docx"],
        doc_type="docx",
        elements=builder.elements,
        page_count=page,
    )


def _docx_grid(table: Any) -> list[list[str]]:
    """A Word table as a grid (python-docx gives a merged cell once per grid column it covers): a merged cell fills
    its columns in header rows and its first one in body rows, so values stay under their headings, then the figures
    are tidied (:func:`ingestion.parsing.model.tidy_figures`)."""
    rows = [list(row.cells) for row in table.rows]
    heads = header_rows([[c.text for c in _dedup(row)] for row in rows])
    grid = []
    for i, row in enumerate(rows):
        if i < heads:
            grid.append([c.text for c in row])
        else:
            grid.append([c.text if j == 0 or c._tc is not row[j - 1]._tc else "" for j, c in enumerate(row)])
    return tidy_figures(grid, heads)


def _dedup(cells: Any) -> list[Any]:
    out: list[Any] = []
    for cell in cells:
        if not out or cell._tc is not out[-1]._tc:
            out.append(cell)
    return out


def _shape_elements(shape: Any, builder: ElementBuilder, page: int, skip: Any) -> None:
    if shape is skip:
        return
    if shape.shape_type is not None and getattr(shape, "shapes", None) is not None:  # group shape
        for sub in shape.shapes:
            _shape_elements(sub, builder, page, skip)
        return
    if getattr(shape, "has_table", False) and shape.has_table:
        builder.table([[c.text for c in row.cells] for row in shape.table.rows], page=page)
        return
    if getattr(shape, "has_text_frame", False) and shape.has_text_frame:
        for para in shape.text_frame.paragraphs:
            text = "".join(run.text for run in para.runs) or para.text
            builder.add("list_item" if para.level > 0 else "text", text, page=page)


def _pictures(shapes: Any) -> list[bytes]:
    blobs: list[bytes] = []
    for shape in shapes:
        if getattr(shape, "shapes", None) is not None and shape.shape_type is not None:  # group shape
            blobs.extend(_pictures(shape.shapes))
        elif getattr(shape, "image", None) is not None or shape.shape_type == 13:  # MSO_SHAPE_TYPE.PICTURE
            try:
                blobs.append(shape.image.blob)
            except Exception:  # noqa: BLE001 - a linked or broken picture has no bytes to read
                continue
    return blobs


def _ocr_slide(slide: Any, builder: ElementBuilder, number: int, confidence: dict[int, float]) -> None:
    """An image-only slide: OCR its pictures (raises PARSE_FAILED when OCR cannot run here)."""
    from core.errors import AppError
    from ingestion.parsing import ocr

    scores: list[float] = []
    for blob in _pictures(slide.shapes):
        ocr.check_ready()
        try:
            frames = ocr.image_frames(blob)
        except AppError:
            continue  # a vector (EMF/WMF) or broken picture: nothing to OCR
        for frame in frames:
            page = ocr.ocr_image(frame)
            if page.confidence is not None and page.lines:
                scores.append(page.confidence)
            for para in page.paragraphs():
                builder.add("text", para, page=number, ocr_confidence=page.confidence)
    if scores:
        confidence[number] = round(sum(scores) / len(scores), 1)


def parse_pptx(data: bytes) -> ParsedDocument:
    import pptx

    zf = _check_zip(data, "PPTX")
    try:
        deck = pptx.Presentation(io.BytesIO(data))
    except Exception as exc:  # noqa: BLE001
        return _xml_fallback(zf, "ppt/slides/slide", "pptx", "PPTX", _short(exc))
    from core.errors import AppError
    from ingestion.parsing import progress as parse_progress

    builder = ElementBuilder()
    warnings: list[str] = []
    confidence: dict[int, float] = {}
    not_ocrd: list[str] = []
    total = len(deck.slides)
    parse_progress.check_pages(total, "slides")
    for number, slide in enumerate(deck.slides, start=1):
        builder.reset_sections()
        title_shape = slide.shapes.title
        title = title_shape.text_frame.text if title_shape is not None and title_shape.has_text_frame else ""
        builder.title(title.strip() or f"Slide {number}", 1, page=number)
        before = len(builder.elements)
        shapes = sorted(slide.shapes, key=lambda s: ((s.top or 0), (s.left or 0)))
        for shape in shapes:
            try:
                _shape_elements(shape, builder, number, title_shape)
            except Exception as exc:  # noqa: BLE001 - one odd shape must not lose the deck
                warnings.append(f"slide {number}: a shape could not be read ({type(exc).__name__})")
        if len(builder.elements) == before and not not_ocrd:  # no text on the slide: read its pictures
            try:
                _ocr_slide(slide, builder, number, confidence)
            except AppError as exc:
                not_ocrd.append(exc.message)
        if slide.has_notes_slide and slide.notes_slide.notes_text_frame is not None:
            notes = slide.notes_slide.notes_text_frame.text.strip()
            if notes:
                builder.add("text", f"Speaker notes: {notes}", page=number)
        parse_progress.report(number, total)
    if not_ocrd:
        warnings.append(f"image-only slides were not OCR'd ({not_ocrd[0]})")
        if all(e.kind == "title" and e.text.startswith("Slide ") for e in builder.elements):
            raise parse_failed(f"presentation has only images, and {not_ocrd[0]}")
    props = deck.core_properties
    return ParsedDocument(
        title=metadata_title(props.title) or builder.first_title(),
        mime_type=MIME["pptx"],
        doc_type="pptx",
        elements=builder.elements,
        page_count=len(deck.slides),
        warnings=warnings,
        ocr_confidence=confidence,
    )


def parse_xlsx(data: bytes) -> ParsedDocument:
    import openpyxl

    _check_zip(data, "XLSX")
    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # noqa: BLE001
        raise parse_failed(f"corrupt XLSX: {_short(exc)}") from None
    builder = ElementBuilder()
    warnings: list[str] = []
    for sheet in book.worksheets:
        builder.reset_sections()
        builder.title(sheet.title, 1)
        rows: list[list[Any]] = []
        for row in sheet.iter_rows(values_only=True):
            if any(v is not None and str(v).strip() for v in row):
                rows.append(["" if v is None else v for v in row])
            if len(rows) > MAX_TABLE_ROWS:
                warnings.append(f"sheet {sheet.title!r}: only the first {MAX_TABLE_ROWS} rows were kept")
                break
        builder.table(rows)
    book.close()
    return ParsedDocument(
        title=builder.first_title(),
        mime_type=MIME["xlsx"],
        doc_type="xlsx",
        elements=builder.elements,
        warnings=warnings,
    )
