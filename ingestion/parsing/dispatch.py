"""In-process parsing: detect the type, route to the format parser. Runs inside the isolated child process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ingestion.parsing import markup, office, pdf, textual
from ingestion.parsing.detect import MIME, decode_text, detect_type
from ingestion.parsing.model import ElementBuilder, ParsedDocument, parse_failed

_LEGACY = {
    "doc": "legacy Word .doc format is not supported (no offline converter such as LibreOffice is installed): "
    "save it as .docx",
    "xls": "legacy Excel .xls format is not supported (no offline converter such as LibreOffice is installed): "
    "save it as .xlsx",
    "ppt": "legacy PowerPoint .ppt format is not supported (no offline converter such as LibreOffice is "
    "installed): save it as .pptx",
}


def _html(data: bytes) -> ParsedDocument:
    text, encoding = decode_text(data)
    builder = ElementBuilder()
    title = markup.html_into(text, builder)
    return ParsedDocument(
        title=title or builder.first_title(),
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
    "rtf": lambda p: textual.parse_with_pandoc(p, "rtf"),
    "odt": lambda p: textual.parse_with_pandoc(p, "odt"),
    "epub": lambda p: textual.parse_with_pandoc(p, "epub"),
}


def parse_in_process(path: Path, filename: str | None = None) -> ParsedDocument:
    """Parse one file in the current process. Raises AppError(PARSE_FAILED) with a reason a person understands."""
    name = filename or path.name
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise parse_failed(f"file cannot be read ({exc.strerror or type(exc).__name__})") from None
    if not data.strip():
        raise parse_failed("file is empty")
    mime, doc_type = detect_type(data, name)
    if doc_type in ("image", "video", "audio"):
        extra = " (images need OCR, which is not enabled)" if doc_type == "image" else ""
        raise parse_failed(f"unsupported file type: {mime}{extra}")
    if doc_type == "encrypted":
        raise parse_failed("encrypted Office document: a password is required")
    if doc_type in _LEGACY:
        raise parse_failed(_LEGACY[doc_type])
    if doc_type in _BY_BYTES:
        doc = _BY_BYTES[doc_type](data)
    elif doc_type in _BY_PATH:
        doc = _BY_PATH[doc_type](path)
    else:
        raise parse_failed(f"unsupported file type: {mime} ({doc_type})")
    if not doc.elements:
        raise parse_failed("no text found in the document")
    if not doc.title:
        doc.title = Path(name).stem
    return doc
