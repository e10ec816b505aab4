"""Plain text, CSV/TSV, e-mail (EML via the standard library, MSG via unstructured) and pandoc-read formats."""

from __future__ import annotations

import csv
import email
import email.policy
import io
import re
from email.message import EmailMessage
from pathlib import Path

from ingestion.parsing.detect import MIME, decode_text
from ingestion.parsing.markup import html_into
from ingestion.parsing.model import MAX_TABLE_ROWS, ElementBuilder, ParsedDocument, parse_failed

_PARAGRAPH = re.compile(r"\n\s*\n")


def text_into(text: str, builder: ElementBuilder) -> None:
    for para in _PARAGRAPH.split(text):
        builder.add("text", para)


def parse_text(data: bytes, doc_type: str = "txt") -> ParsedDocument:
    text, encoding = decode_text(data)
    builder = ElementBuilder()
    if doc_type == "xml":
        text = _xml_text(data) or text
    text_into(text, builder)
    return ParsedDocument(
        title="",
        mime_type=MIME.get(doc_type, "text/plain"),
        doc_type=doc_type,
        elements=builder.elements,
        encoding=encoding,
    )


def _xml_text(data: bytes) -> str:
    from lxml import etree

    try:
        root = etree.fromstring(data, parser=etree.XMLParser(recover=True, resolve_entities=False, no_network=True))
    except etree.XMLSyntaxError:
        return ""
    if root is None:
        return ""
    return "\n\n".join(t.strip() for t in root.itertext() if t.strip())


def parse_csv(data: bytes, doc_type: str = "csv") -> ParsedDocument:
    text, encoding = decode_text(data)
    sample = "\n".join(text.splitlines()[:50])
    warnings: list[str] = []
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if doc_type == "tsv" else csv.excel
    csv.field_size_limit(10_000_000)
    rows: list[list[str]] = []
    try:
        for row in csv.reader(io.StringIO(text), dialect):
            rows.append(row)
            if len(rows) > MAX_TABLE_ROWS:
                warnings.append(f"only the first {MAX_TABLE_ROWS} rows were kept")
                break
    except csv.Error as exc:
        warnings.append(f"CSV is malformed after row {len(rows)} ({exc})")
    builder = ElementBuilder()
    builder.table(rows)
    return ParsedDocument(
        title="",
        mime_type=MIME[doc_type],
        doc_type=doc_type,
        elements=builder.elements,
        encoding=encoding,
        warnings=warnings,
    )


def parse_eml(data: bytes) -> ParsedDocument:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    ctype = msg.get_content_type()
    if ctype in ("application/pkcs7-mime", "application/x-pkcs7-mime", "multipart/encrypted"):
        raise parse_failed("encrypted e-mail (S/MIME or PGP): it cannot be read without the private key")
    builder = ElementBuilder()
    subject = str(msg.get("subject", "") or "").strip()
    builder.title(subject or "(no subject)", 1)
    headers = [f"{h}: {msg[h]}" for h in ("From", "To", "Cc", "Date") if msg.get(h)]
    builder.add("text", "\n".join(headers), keep_layout=True)
    attachments: list[str] = []
    body = None
    try:
        body = msg.get_body(preferencelist=("plain", "html"))
        for part in msg.iter_attachments():
            attachments.append(part.get_filename() or part.get_content_type())
    except Exception:  # noqa: BLE001 - malformed MIME structure: read what is there
        body = None
    if body is None and not msg.is_multipart():
        body = msg
    if body is not None:
        try:
            content = body.get_content()
        except Exception:  # noqa: BLE001 - unknown charset or broken transfer encoding
            payload = body.get_payload(decode=True) or b""
            content = decode_text(payload if isinstance(payload, bytes) else str(payload).encode())[0]
        if isinstance(content, bytes):
            content = decode_text(content)[0]
        if body.get_content_type() == "text/html":
            html_into(str(content), builder)
        else:
            text_into(str(content), builder)
    if attachments:
        builder.add("text", "Attachments: " + ", ".join(attachments))
    warnings = [f"{len(attachments)} attachment(s) not parsed"] if attachments else []
    return ParsedDocument(
        title=subject, mime_type=MIME["eml"], doc_type="eml", elements=builder.elements, warnings=warnings
    )


def parse_msg(path: Path) -> ParsedDocument:
    """Outlook .msg with python-oxmsg (light: no NLP stack, so it fits the parser's memory limit)."""
    from oxmsg import Message

    try:
        msg = Message.load(str(path))
        subject = str(msg.subject or "").strip()
        sender = str(msg.sender or "").strip()
        recipients = ", ".join(
            f"{r.name} <{r.email_address}>" if r.name and r.email_address else (r.email_address or r.name or "")
            for r in msg.recipients or ()
        )
        sent = msg.sent_date
        body, html = msg.body, msg.html_body
        attachments = [a.file_name or a.mime_type or "attachment" for a in msg.attachments]
    except Exception as exc:  # noqa: BLE001 - python-oxmsg raises many types on damaged files
        raise parse_failed(f"corrupt or unreadable Outlook MSG file ({type(exc).__name__})") from None
    builder = ElementBuilder()
    builder.title(subject or "(no subject)", 1)
    headers = [f"{k}: {v}" for k, v in (("From", sender), ("To", recipients), ("Date", sent)) if v]
    builder.add("text", "\n".join(headers), keep_layout=True)
    if body and body.strip():
        text_into(body, builder)
    elif html:
        html_into(html if isinstance(html, str) else decode_text(html)[0], builder)
    if attachments:
        builder.add("text", "Attachments: " + ", ".join(attachments))
    warnings = [f"{len(attachments)} attachment(s) not parsed"] if attachments else []
    return ParsedDocument(
        title=subject, mime_type=MIME["msg"], doc_type="msg", elements=builder.elements, warnings=warnings
    )


def parse_with_pandoc(path: Path, doc_type: str) -> ParsedDocument:
    """RTF, ODT and EPUB: pandoc (from the pypandoc-binary wheel) converts to HTML, which we parse."""
    try:
        import pypandoc
    except ImportError:
        raise parse_failed(f"{doc_type.upper()} files cannot be parsed: pandoc is not installed") from None
    try:
        html = pypandoc.convert_file(str(path), "html", format=doc_type, extra_args=["--quiet"])
    except (RuntimeError, OSError) as exc:
        first = str(exc).strip().splitlines()[-1][:160] if str(exc).strip() else type(exc).__name__
        raise parse_failed(f"corrupt {doc_type.upper()}: {first}") from None
    builder = ElementBuilder()
    title = html_into(html, builder)
    return ParsedDocument(
        title=title or builder.first_title(), mime_type=MIME[doc_type], doc_type=doc_type, elements=builder.elements
    )
