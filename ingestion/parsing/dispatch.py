"""In-process parsing: detect the type, route to the format parser. Runs inside the isolated child process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ingestion.parsing import convert, markup, ocr, office, pdf, textual
from ingestion.parsing import progress as parse_progress
from ingestion.parsing.detect import MIME, decode_text, detect_type
from ingestion.parsing.model import ElementBuilder, ParsedDocument, metadata_title, parse_failed

#: Types that pandoc reads when LibreOffice is not installed.
_PANDOC_FALLBACK = {"odt", "rtf"}


def _html(data: bytes) -> ParsedDocument:
    text, encoding = decode_text(data)
    builder = ElementBuilder()
    title = markup.html_into(text, builder)
    return ParsedDocument(
        title=metadata_title(title) or builder.first_title(),
        mime_type=MIME["html"],
        doc_type="html",
        elements=builder.elements,
        encoding=encoding,
    )


def _markdown(data: bytes) -> ParsedDocument:
    text, encoding = decode_text(data)
    builder = ElementBuilder()
    markup.markdown_into(text, builder)
    return ParsedDocument(
        title=builder.first_title(), mime_type=MIME["md"], doc_type="md", elements=builder.elements, encoding=encoding
    )


def _image(data: bytes, mime: str) -> ParsedDocument:
    """PNG, JPEG, TIFF (every frame), ...: OCR with Tesseract, one page per frame."""
    frames = ocr.image_frames(data)
    ocr.check_ready()
    parse_progress.check_pages(len(frames), "image frames")
    builder = ElementBuilder()
    confidence: dict[int, float] = {}
    for number, frame in enumerate(frames, start=1):
        page = ocr.ocr_image(frame)
        parse_progress.report(number, len(frames))
        if page.confidence is not None:
            confidence[number] = page.confidence
        for para in page.paragraphs():
            builder.add("text", para, page=number, ocr_confidence=page.confidence)
    if not builder.elements:
        low = [c for c in confidence.values() if c < ocr.MIN_PAGE_CONFIDENCE]
        if low:
            raise parse_failed(
                f"no readable text found in the image (OCR confidence {max(low):.0f} of 100, below "
                f"{ocr.MIN_PAGE_CONFIDENCE:.0f}; if its text is not in '{ocr.languages()}', add its language to "
                "KBQA_INGESTION__OCR_LANGUAGES)"
            )
        raise parse_failed("no text found in the image (OCR read no words)")
    return ParsedDocument(
        title="",
        mime_type=mime,
        doc_type="image",
        elements=builder.elements,
        page_count=len(frames),
        ocr_confidence=confidence,
    )


def _converted(data: bytes, path: Path, doc_type: str) -> ParsedDocument:
    """A legacy or OpenDocument file: LibreOffice converts it to OOXML, which the OOXML parser reads."""
    if convert.soffice() is None and doc_type in _PANDOC_FALLBACK:
        return textual.parse_with_pandoc(path, doc_type)
    target = convert.TARGET[doc_type]
    doc = _BY_BYTES[target](convert.convert(data, doc_type))
    doc.doc_type = doc_type
    doc.mime_type = MIME[doc_type]
    return doc


_BY_BYTES: dict[str, Callable[[bytes], ParsedDocument]] = {
    "pdf": pdf.parse_pdf,
    "docx": office.parse_docx,
    "pptx": office.parse_pptx,
    "xlsx": office.parse_xlsx,
    "html": _html,
    "md": _markdown,
    "csv": textual.parse_csv,
    "tsv": lambda d: textual.parse_csv(d, "tsv"),
    "eml": textual.parse_eml,
    "txt": textual.parse_text,
    "json": lambda d: textual.parse_text(d, "json"),
    "xml": lambda d: textual.parse_text(d, "xml"),
}
_BY_PATH: dict[str, Callable[[Path], ParsedDocument]] = {
    "msg": textual.parse_msg,
    "epub": lambda p: textual.parse_with_pandoc(p, "epub"),
}


def _read(path: Path, name: str) -> tuple[bytes, str, str]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise parse_failed(f"file cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not data.strip():
        raise parse_failed("file is empty")
    mime, doc_type = detect_type(data, name)
    return data, mime, doc_type


def parse_in_process(path: Path, filename: str | None = None) -> ParsedDocument:
    """Parse one file in the current process. Raises AppError(PARSE_FAILED) with a reason a person understands."""
    name = filename or path.name
    data, mime, doc_type = _read(path, name)
    if doc_type == "image":
        doc = _image(data, mime)
    elif doc_type in ("video", "audio"):
        raise parse_failed(f"unsupported file type: {mime}")
    elif doc_type == "encrypted":
        raise parse_failed("encrypted Office document: a password is required")
    elif doc_type in convert.TARGET:
        doc = _converted(data, path, doc_type)
    elif doc_type in _BY_BYTES:
        doc = _BY_BYTES[doc_type](data)
    elif doc_type in _BY_PATH:
        doc = _BY_PATH[doc_type](path)
    else:
        raise parse_failed(f"unsupported file type: {mime} ({doc_type})")
    return finish(doc, name)


def finish(doc: ParsedDocument, name: str) -> ParsedDocument:
    """The checks every parse ends with: a document without text fails; one without a title takes the file's name."""
    if not doc.elements:
        raise parse_failed("no text found in the document")
    if not doc.title:
        doc.title = Path(name).stem
    return doc


def parse_part_in_process(path: Path, filename: str | None = None) -> ParsedDocument | pdf.PdfPart:
    """A part of a file (the pages in ``KBQA_PARSE_PAGES``): for a PDF, a :class:`pdf.PdfPart` of those pages (its
    ``total`` tells the caller how many parts the document has); any other file is parsed whole, as
    :func:`parse_in_process` does, when its first part is asked for."""
    name = filename or path.name
    pages = parse_progress.page_range()
    data, _mime, doc_type = _read(path, name)
    if doc_type == "pdf" and pages is not None:
        return pdf.read_pages(data, pages[0], pages[1])
    if pages is not None and pages[0] > 1:
        raise parse_failed(f"internal error: pages {pages[0]}-{pages[1]} asked of a {doc_type} file")
    return parse_in_process(path, filename)
