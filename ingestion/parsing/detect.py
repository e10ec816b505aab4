"""File type detection from content (extension only breaks ties) and text decoding."""

from __future__ import annotations

import codecs
import csv
import io
import re
import zipfile
from pathlib import PurePath

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_BOM_LEN = {"utf-32-le": 4, "utf-32-be": 4, "utf-8-sig": 3, "utf-16-le": 2, "utf-16-be": 2}

MIME: dict[str, str] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "epub": "application/epub+zip",
    "doc": "application/msword",
    "xls": "application/vnd.ms-excel",
    "ppt": "application/vnd.ms-powerpoint",
    "msg": "application/vnd.ms-outlook",
    "eml": "message/rfc822",
    "rtf": "application/rtf",
    "html": "text/html",
    "xml": "application/xml",
    "json": "application/json",
    "md": "text/markdown",
    "csv": "text/csv",
    "tsv": "text/tab-separated-values",
    "txt": "text/plain",
    "zip": "application/zip",
    "binary": "application/octet-stream",
    "encrypted": "application/x-encrypted-office",
}
_EXT_ALIASES = {
    "htm": "html",
    "xhtml": "html",
    "markdown": "md",
    "text": "txt",
    "log": "txt",
    "xlsm": "xlsx",
    "docm": "docx",
    "pptm": "pptx",
    "ndjson": "json",
    "jsonl": "json",
    "nxml": "xml",
    "rst": "txt",
    "org": "txt",
    "adoc": "txt",
    "asciidoc": "txt",
    "vtt": "txt",
    "srt": "txt",
}
_TEXT_EXTS = {"txt", "md", "html", "xml", "json", "csv", "tsv", "eml", "rtf"}
_EML_HEADERS = re.compile(
    rb"^(from|to|subject|date|received|return-path|message-id|mime-version|delivered-to|cc|reply-to|x-[\w-]+):",
    re.IGNORECASE | re.MULTILINE,
)
_HTML_TAG = re.compile(rb"<(!doctype html|html|head|body|div|p|table|h[1-6]|ul|ol|span|a|br|meta|title)[\s>/]", re.I)
_NON_LATIN = re.compile(
    r"[\u0370-\u03ff\u0400-\u04ff\u0590-\u06ff\u0e00-\u0e7f\u3040-\u30ff\u4e00-\u9fff\uac00-\ud7af]"
)


def _ext(filename: str | None) -> str:
    if not filename:
        return ""
    ext = PurePath(filename).suffix.lower().lstrip(".")
    return _EXT_ALIASES.get(ext, ext)


def _result(doc_type: str) -> tuple[str, str]:
    return MIME.get(doc_type, "application/octet-stream"), doc_type


def _zip_type(data: bytes, ext: str) -> str:
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        names = set(zf.namelist())
        if "mimetype" in names:
            mt = zf.read("mimetype").decode("ascii", "replace").strip()
            for doc_type in ("epub", "odt", "ods", "odp"):
                if mt == MIME[doc_type]:
                    return doc_type
        if "[Content_Types].xml" in names:
            for prefix, doc_type in (("word/", "docx"), ("ppt/", "pptx"), ("xl/", "xlsx")):
                if any(n.startswith(prefix) for n in names):
                    return doc_type
    except (zipfile.BadZipFile, OSError, ValueError, KeyError):
        pass  # a damaged container: trust the extension so the parser can say what is wrong with it
    return ext if ext in ("docx", "pptx", "xlsx", "odt", "ods", "odp", "epub") else "zip"


def _ole_type(data: bytes, ext: str) -> str:
    try:
        import olefile

        ole = olefile.OleFileIO(data)
        streams = {"/".join(s) for s in ole.listdir()}
    except Exception:  # noqa: BLE001 - a broken OLE container still has a type: fall back to the extension
        streams = set()
    if any(s.startswith("__substg1.0_") for s in streams):
        return "msg"
    if "EncryptedPackage" in streams:
        return "encrypted"
    for stream, doc_type in (
        ("WordDocument", "doc"),
        ("Workbook", "xls"),
        ("Book", "xls"),
        ("PowerPoint Document", "ppt"),
    ):
        if stream in streams:
            return doc_type
    return ext if ext in ("doc", "xls", "ppt", "msg") else "binary"


def _looks_binary(sample: bytes) -> bool:
    if not sample:
        return False
    for bom, _ in _BOMS:
        if sample.startswith(bom):
            return False
    if _utf16_without_bom(sample):
        return False
    if sample.count(b"\x00") > len(sample) // 4:
        return True
    controls = sum(1 for b in sample if b < 9 or 13 < b < 32)
    return controls > len(sample) // 10


def _utf16_without_bom(sample: bytes) -> str | None:
    if len(sample) < 4:
        return None
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
        return "utf-16-be"
    return None


def _text_type(head: str, ext: str) -> str:
    raw = head.encode("utf-8", "replace")
    stripped = raw.lstrip()
    if ext in ("md", "csv", "tsv", "json"):
        return ext
    if _EML_HEADERS.match(stripped) and len(_EML_HEADERS.findall(raw[:4096])) >= 3:
        return "eml"
    if stripped[:5].lower() == b"<?xml":
        return "html" if re.search(rb"<html", raw[:4096], re.I) else "xml"
    if _HTML_TAG.search(raw[:4096]) and (ext in ("", "html") or stripped.startswith(b"<")):
        return "html"
    if stripped[:1] in (b"{", b"[") and ext in ("", "json"):
        return "json"
    if ext in _TEXT_EXTS:
        return ext if ext not in ("html", "xml", "eml", "rtf") else "txt"
    if not ext and re.search(r"^#{1,6} \S", head, re.M):
        return "md"
    if not ext and _sniff_csv(head):
        return "csv"
    return "txt"


def _sniff_csv(head: str) -> bool:
    lines = [ln for ln in head.splitlines()[:20] if ln.strip()]
    if len(lines) < 3:
        return False
    try:
        dialect = csv.Sniffer().sniff("\n".join(lines), delimiters=",;\t|")
    except csv.Error:
        return False
    counts = {ln.count(dialect.delimiter) for ln in lines}
    return len(counts) == 1 and counts.pop() >= 1


def detect_type(data: bytes, filename: str | None) -> tuple[str, str]:
    """Return ``(mime_type, doc_type)`` judged from the bytes; the file name's extension only breaks ties."""
    ext = _ext(filename)
    head = data[:8192]
    if b"%PDF-" in head[:1024]:
        return _result("pdf")
    if head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06"):
        return _result(_zip_type(data, ext))
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"):
        return _result(_ole_type(data, ext))
    if head.lstrip()[:5] == b"{\\rtf":
        return _result("rtf")
    import filetype

    kind = filetype.guess(head)
    if kind is not None and kind.mime.startswith(("image/", "audio/", "video/")):
        return kind.mime, kind.mime.split("/")[0]
    if kind is not None and kind.extension in ("zip", "gz", "bz2", "xz", "7z", "rar", "tar", "exe"):
        return kind.mime, kind.extension
    if _looks_binary(head[:4096]):
        if ext in ("pdf", "docx", "pptx", "xlsx", "doc", "xls", "ppt", "msg", "odt", "ods", "odp", "epub"):
            return _result(ext)  # damaged file: let its parser report what is wrong
        return _result("binary")
    text, _ = decode_text(head)
    return _result(_text_type(text, ext))


def decode_text(data: bytes) -> tuple[str, str]:
    """Decode bytes to text: BOMs (UTF-8/16/32) first, then strict UTF-8, then charset-normalizer for non-Latin
    scripts, then cp1252 and finally latin-1 (which never fails)."""
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return data[_BOM_LEN[enc] :].decode(enc.replace("-sig", ""), errors="replace"), enc
    utf16 = _utf16_without_bom(data[:4096])
    if utf16:
        return data.decode(utf16, errors="replace"), utf16
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as exc:
        if exc.start >= len(data) - 3 and len(data) >= 4096:  # a sample cut through a multi-byte character
            return data[: exc.start].decode("utf-8"), "utf-8"
    try:
        import charset_normalizer

        best = charset_normalizer.from_bytes(data[:200_000]).best()
    except Exception:  # noqa: BLE001 - detection is a heuristic; fall through to the Western default
        best = None
    if best is not None and best.encoding:
        guess = str(best)
        if len(_NON_LATIN.findall(guess)) > 0.3 * sum(c.isalpha() for c in guess):
            return data.decode(best.encoding, errors="replace"), best.encoding
    try:
        return data.decode("cp1252"), "cp1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "latin-1"
