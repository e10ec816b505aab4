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
from ingestion.parsing.model import MAX_TABLE_ROWS, ElementBuilder, ParsedDocument, metadata_title, parse_failed

_PARAGRAPH = re.compile(r"\n\s*\n")


def text_into(text: str, builder: ElementBuilder) -> None:
    for para in _PARAGRAPH.split(text):
        builder.add("text", para)


# --- structure in plain text -----------------------------------------------------------------------------------------
#: "=====" / "-----" / "~~~~~" under a heading line (setext, reStructuredText)
_UNDERLINE = re.compile(r"^\s*([=\-~^*#+])\1{2,}\s*$")
_UNDERLINE_LEVEL = {"=": 1, "#": 1, "*": 1, "-": 2, "~": 3, "^": 3, "+": 3}
#: "- item", "* item", "• item", "1. item", "2) item"
_LIST_ITEM = re.compile(r"^\s*(?:([-*•‣◦▪])|(\d{1,3})[.)])\s+(\S.*)$")
#: "2.1 Scope", "3.4.1. Limits", "Chapter 4: Returns", "Section 2 - Billing"
_NUMBERED_HEADING = re.compile(
    r"^\s*(?:(\d+(?:\.\d+)+)\.?|(?:chapter|section|part|article)\s+[\dIVXLC]+[.:)\-–]?)\s+\S", re.IGNORECASE
)
_HEADING_ENDS = (".", ",", ";", ":", "!")  # a heading never ends a sentence this way ("?" is an FAQ question heading)
_SENTENCE_ENDS = (".", "!", "?", ":", ";")
_SMALL = {"a", "an", "and", "as", "at", "but", "by", "for", "from", "in", "into", "nor", "of", "on", "or", "per", "the",
          "to", "via", "vs", "with", "your", "you", "our", "its", "is", "are", "be", "do", "if", "not", "than", "that"}
#: a file whose candidate heading lines are more than this share of its lines is a list or verse, not headed text
MAX_HEADING_SHARE = 0.5


def _title_case(line: str) -> bool:
    """"What You Need To Apply", "Returns and Refunds": most words that are not small words are capitalised."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z'’-]*", line) if w.lower() not in _SMALL]
    return bool(words) and sum(w[0].isupper() for w in words) >= max(1, 0.75 * len(words))


def _heading_shape(line: str) -> bool:
    words = line.split()
    limit = 20 if line.endswith("?") else 12
    return (
        1 <= len(words) <= limit and len(line) <= 120 and (line[0].isupper() or line[0].isdigit())
        and not line.endswith(_HEADING_ENDS) and not _LIST_ITEM.match(line)
        and sum(ch.isalpha() for ch in line) >= 0.5 * len(line.replace(" ", ""))
    )


def plain_headings(lines: list[str]) -> dict[int, int]:
    """Line index -> heading level for the heading lines of a plain-text file.

    - a line underlined with ``===`` (level 1) or ``---`` (2) or ``~~~`` (3);
    - a numbered section line, "2.1 Scope" (level: depth + 1) or "Chapter 4: Returns" (level 1);
    - a short line on its own (after a blank line, the start, or a finished sentence) that does not end like a
      sentence, followed by body text (a longer line or a list item), and either title case ("What You Need To
      Apply"), a question ("How do I know which program I'm eligible for?") or clearly shorter than the text under it
      (at most half its length: help-centre exports put a sentence-case heading above a one-line paragraph). Level 2;
      such a line at the very top is level 1 (the page title).

    No headings are read from a file whose candidate lines exceed ``MAX_HEADING_SHARE`` of its lines (a list or a
    poem, not a headed text)."""
    stripped = [ln.strip() for ln in lines]
    found: dict[int, int] = {}
    nonblank = [i for i, ln in enumerate(stripped) if ln]
    following = {a: b for a, b in zip(nonblank, nonblank[1:], strict=False)}
    for k, i in enumerate(nonblank):
        line = stripped[i]
        if _UNDERLINE.match(line):
            continue
        nxt = i + 1
        if nxt < len(stripped) and _UNDERLINE.match(stripped[nxt]) and len(line.split()) <= 15:
            found[i] = _UNDERLINE_LEVEL[stripped[nxt][0]]
            continue
        if not _heading_shape(line):
            continue
        prev = stripped[i - 1] if i > 0 else ""
        if prev and not prev.endswith(_SENTENCE_ENDS) and not _UNDERLINE.match(prev) and prev.rstrip("?") == prev:
            continue  # the middle of a wrapped paragraph
        j = following.get(i)
        if j is None:
            continue
        body = stripped[j]
        if _UNDERLINE.match(body):
            continue
        numbered = _NUMBERED_HEADING.match(line)
        if numbered:
            found[i] = (numbered.group(1).count(".") + 1) if numbered.group(1) else 1
            continue
        body_words = len(body.split())
        body_follows = bool(_LIST_ITEM.match(body)) or body_words >= max(8, 1.5 * len(line.split()))
        if not body_follows or (line.endswith("?") and body.endswith("?")):
            continue
        if _title_case(line) or line.endswith("?") or len(body) >= 2 * len(line):
            found[i] = 1 if k == 0 else 2
    if len(found) > MAX_HEADING_SHARE * max(1, len(nonblank)):
        return {}
    return found


def structured_text_into(text: str, builder: ElementBuilder) -> bool:
    """Plain text with its structure: headings (:func:`plain_headings`) become titles, so the text gets sections like
    Markdown; lines that are list items become list items (numbered ones keep their number); the rest are
    paragraphs. False (nothing added) when the text has no heading lines: the caller adds it as flat paragraphs."""
    lines = text.splitlines()
    heads = plain_headings(lines)
    if not heads:
        return False
    para: list[str] = []

    def flush() -> None:
        if para:
            builder.add("text", "\n".join(para))
            para.clear()

    for i, raw in enumerate(lines):
        line = raw.strip()
        if i in heads:
            flush()
            builder.title(line, heads[i])
        elif not line or _UNDERLINE.match(line):
            flush()
        elif (item := _LIST_ITEM.match(line)) is not None:
            flush()
            builder.add("list_item", item.group(3), marker=f"{item.group(2)}." if item.group(2) else "-")
        else:
            para.append(line)
    flush()
    return True


def parse_text(data: bytes, doc_type: str = "txt") -> ParsedDocument:
    """Plain text (headings, lists and paragraphs read from the layout, see :func:`plain_headings`) or XML text."""
    text, encoding = decode_text(data)
    builder = ElementBuilder()
    if doc_type == "xml":
        text = _xml_text(data) or text
        text_into(text, builder)
    elif not structured_text_into(text, builder):
        text_into(text, builder)
    return ParsedDocument(
        title=builder.first_title() if doc_type != "xml" else "",
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
        title=metadata_title(title) or builder.first_title(), mime_type=MIME[doc_type], doc_type=doc_type,
        elements=builder.elements,
    )
