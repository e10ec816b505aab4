"""Build the demo knowledge base's DOCX and PDF files from their Markdown sources.

The demo KB lives in ``demo/kb/``: Markdown and HTML documents are shipped as written, while the sources in
``demo/kb/src/`` are rendered to Word (python-docx) or PDF (reportlab) next to them. Output is deterministic: fixed
metadata dates, fixed ZIP entry times for DOCX and reportlab's invariant mode for PDF.

Usage::

    python scripts/build_demo_docs.py            # regenerate demo/kb/*.docx and *.pdf
    python scripts/build_demo_docs.py --check    # rebuild into a temp dir and verify the outputs
"""

from __future__ import annotations

import argparse
import io
import re
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from xml.sax.saxutils import escape

from markdown_it import MarkdownIt

KB_DIR = Path(__file__).resolve().parents[1] / "demo" / "kb"
SRC_DIR = KB_DIR / "src"
AUTHOR = "Kestrel Devices Support"
FIXED_DATE = datetime(2026, 1, 15, 9, 0, 0, tzinfo=UTC)
ZIP_DATE = (2026, 1, 15, 9, 0, 0)

# Source stem -> output format. Each source becomes exactly one shipped file.
TARGETS: dict[str, str] = {
    "kestrel-hub-user-manual": "docx",
    "return-and-warranty-policy": "docx",
    "kestrel-thermo-installation-guide": "docx",
    "kestrel-protect-subscription-plans": "docx",
    "kestrel-cam-2-user-manual": "pdf",
    "troubleshooting-guide": "pdf",
    "privacy-and-data-retention-policy": "pdf",
    "kestrel-thermo-user-manual": "pdf",
}


@dataclass(frozen=True)
class Heading:
    level: int
    text: str


@dataclass(frozen=True)
class Para:
    text: str


@dataclass(frozen=True)
class ListBlock:
    ordered: bool
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


Block = Heading | Para | ListBlock | Table


def _inline_text(token) -> str:  # noqa: ANN001 - markdown_it Token
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
    return "".join(parts).strip()


def parse_markdown(text: str) -> list[Block]:
    """Parse the Markdown subset used by the demo sources: headings, paragraphs, flat lists, pipe tables."""
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    blocks: list[Block] = []
    list_items: list[str] | None = None
    ordered = False
    rows: list[list[str]] = []
    heading_level = 0
    in_cell = False
    for tok in tokens:
        kind = tok.type
        if kind == "heading_open":
            heading_level = int(tok.tag[1])
        elif kind in ("bullet_list_open", "ordered_list_open"):
            list_items, ordered = [], kind == "ordered_list_open"
        elif kind in ("bullet_list_close", "ordered_list_close") and list_items is not None:
            blocks.append(ListBlock(ordered, tuple(list_items)))
            list_items = None
        elif kind == "table_open":
            rows = []
        elif kind == "tr_open":
            rows.append([])
        elif kind in ("th_open", "td_open", "th_close", "td_close"):
            in_cell = kind.endswith("_open")
        elif kind == "table_close":
            blocks.append(Table(tuple(rows[0]), tuple(tuple(r) for r in rows[1:])))
        elif kind == "inline":
            content = _inline_text(tok)
            if heading_level:
                blocks.append(Heading(heading_level, content))
                heading_level = 0
            elif in_cell:
                rows[-1].append(content)
            elif list_items is not None:
                list_items.append(content)
            else:
                blocks.append(Para(content))
    return blocks


def headings_of(blocks: list[Block]) -> list[Heading]:
    return [b for b in blocks if isinstance(b, Heading)]


def title_of(blocks: list[Block]) -> str:
    return next(b.text for b in blocks if isinstance(b, Heading) and b.level == 1)


# ---------------------------------------------------------------- DOCX


def _numbered_list_id(doc) -> int:  # noqa: ANN001 - docx Document
    """A fresh w:num for the "List Number" style that restarts at 1, so each ordered list counts from 1."""
    numbering = doc.part.numbering_part.element
    style_num_id = doc.styles["List Number"].element.pPr.numPr.numId.val
    abstract_id = numbering.xpath(f"./w:num[@w:numId='{style_num_id}']/w:abstractNumId/@w:val")[0]
    num = numbering.add_num(int(abstract_id))
    num.add_lvlOverride(ilvl=0).add_startOverride(1)
    return int(num.numId)


def _docx_table(doc, table: Table) -> None:  # noqa: ANN001
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    grid = doc.add_table(rows=1 + len(table.rows), cols=len(table.header))
    grid.style = doc.styles["Table Grid"]
    for row_idx, cells in enumerate((table.header, *table.rows)):
        for col_idx, value in enumerate(cells):
            paragraph = grid.cell(row_idx, col_idx).paragraphs[0]
            paragraph.add_run(value).bold = row_idx == 0
    header_props = grid.rows[0]._tr.get_or_add_trPr()
    header_props.append(OxmlElement("w:tblHeader"))  # repeat the header row on each page
    header_props[-1].set(qn("w:val"), "true")


def write_docx(blocks: list[Block], path: Path) -> None:
    from docx import Document

    doc = Document()
    props = doc.core_properties
    props.title, props.author, props.last_modified_by = title_of(blocks), AUTHOR, AUTHOR
    props.created = props.modified = props.last_printed = FIXED_DATE
    props.revision = 1
    for block in blocks:
        if isinstance(block, Heading):
            doc.add_heading(block.text, level=block.level)
        elif isinstance(block, Para):
            doc.add_paragraph(block.text)
        elif isinstance(block, ListBlock):
            num_id = _numbered_list_id(doc) if block.ordered else None
            for item in block.items:
                paragraph = doc.add_paragraph(item, style="List Number" if block.ordered else "List Bullet")
                if num_id is not None:
                    paragraph._p.get_or_add_pPr().get_or_add_numPr().get_or_add_numId().val = num_id
        else:
            _docx_table(doc, block)
    buffer = io.BytesIO()
    doc.save(buffer)
    _write_fixed_zip(buffer.getvalue(), path)


def _write_fixed_zip(data: bytes, path: Path) -> None:
    """Rewrite a DOCX package with fixed entry timestamps so identical input gives identical bytes."""
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=ZIP_DATE)
            fixed.compress_type = zipfile.ZIP_DEFLATED
            fixed.external_attr = 0o644 << 16
            dst.writestr(fixed, src.read(info.filename))


# ---------------------------------------------------------------- PDF


def write_pdf(blocks: list[Block], path: Path) -> None:
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import LETTER
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.lib.units import mm
    from reportlab.platypus import ListFlowable, ListItem, Paragraph, SimpleDocTemplate, Spacer
    from reportlab.platypus import Table as PdfTable

    title = title_of(blocks)
    styles = getSampleStyleSheet()
    body, cell = styles["BodyText"], styles["BodyText"].clone("Cell", fontSize=9, leading=11)

    class KbDoc(SimpleDocTemplate):
        def afterFlowable(self, flowable) -> None:  # noqa: ANN001, N802 - reportlab hook
            level = getattr(flowable, "kb_level", 0)
            if level:  # one PDF outline (bookmark) entry per heading, nested like the headings
                key = f"h{id(flowable)}"
                self.canv.bookmarkPage(key)
                self.canv.addOutlineEntry(flowable.getPlainText(), key, level=level - 1, closed=False)

    def footer(canvas, doc) -> None:  # noqa: ANN001
        canvas.setFont("Helvetica", 8)
        canvas.drawString(doc.leftMargin, 12 * mm, f"Kestrel Devices - {title} - Page {doc.page}")

    doc = KbDoc(
        str(path),
        pagesize=LETTER,
        title=title,
        author=AUTHOR,
        subject=title,
        creator=AUTHOR,
        invariant=1,
        bottomMargin=22 * mm,
    )
    story: list = []
    for block in blocks:
        if isinstance(block, Heading):
            heading = Paragraph(escape(block.text), styles[f"Heading{block.level}"])
            heading.kb_level = block.level
            story.append(heading)
        elif isinstance(block, Para):
            story.append(Paragraph(escape(block.text), body))
        elif isinstance(block, ListBlock):
            items = [ListItem(Paragraph(escape(item), body)) for item in block.items]
            story.append(ListFlowable(items, bulletType="1" if block.ordered else "bullet", start=None))
        else:
            data = [[Paragraph(f"<b>{escape(c)}</b>", cell) for c in block.header]]
            data += [[Paragraph(escape(c), cell) for c in row] for row in block.rows]
            table = PdfTable(data, colWidths=_column_widths(block, doc.width), repeatRows=1, hAlign="LEFT")
            table.setStyle(
                [
                    ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                    ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#dde6ee")),
                    ("VALIGN", (0, 0), (-1, -1), "TOP"),
                ]
            )
            story += [Spacer(1, 2 * mm), table, Spacer(1, 4 * mm)]
    doc.build(story, onFirstPage=footer, onLaterPages=footer)


def _column_widths(table: Table, total: float) -> list[float]:
    """Share the page width by the square root of each column's longest cell, so short columns stay narrow."""
    weights = [max(len(row[i]) for row in (table.header, *table.rows)) ** 0.5 for i in range(len(table.header))]
    return [total * w / sum(weights) for w in weights]


# ---------------------------------------------------------------- text extraction


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._skip += tag in ("script", "style")
        self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        self._skip -= tag in ("script", "style")
        self.parts.append(" ")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)


def extract_text(path: Path) -> str:
    """Plain text of a KB file of any shipped format (Markdown/HTML as text, DOCX incl. tables, PDF text layer)."""
    suffix = path.suffix.lower()
    if suffix == ".md":
        return path.read_text(encoding="utf-8")
    if suffix == ".html":
        parser = _HtmlText()
        parser.feed(path.read_text(encoding="utf-8"))
        return "".join(parser.parts)
    if suffix == ".docx":
        from docx import Document

        doc = Document(str(path))
        lines = [p.text for p in doc.paragraphs]
        lines += [" | ".join(c.text for c in row.cells) for t in doc.tables for row in t.rows]
        return "\n".join(lines)
    if suffix == ".pdf":
        from pypdf import PdfReader

        return "\n".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)
    raise ValueError(f"unsupported KB file type: {path.name}")


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("\u00a0", " ")).strip()


# ---------------------------------------------------------------- build and check


def build(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for stem, fmt in TARGETS.items():
        blocks = parse_markdown((SRC_DIR / f"{stem}.md").read_text(encoding="utf-8"))
        target = out_dir / f"{stem}.{fmt}"
        (write_docx if fmt == "docx" else write_pdf)(blocks, target)
        written.append(target)
    return written


def _verify(path: Path, blocks: list[Block]) -> list[str]:
    """Problems with one generated file: unparseable, missing headings, missing tables."""
    errors: list[str] = []
    heads = headings_of(blocks)
    n_tables = sum(isinstance(b, Table) for b in blocks)
    if path.suffix == ".docx":
        from docx import Document

        doc = Document(str(path))
        found = {(p.style.name, p.text) for p in doc.paragraphs}
        errors += [
            f"{path.name}: no 'Heading {h.level}' paragraph {h.text!r}"
            for h in heads
            if (f"Heading {h.level}", h.text) not in found
        ]
        if len(doc.tables) != n_tables:
            errors.append(f"{path.name}: {len(doc.tables)} tables, expected {n_tables}")
    else:
        from pypdf import PdfReader

        outline = [item.title for item in _flatten(PdfReader(str(path)).outline)]
        text = normalize(extract_text(path))
        errors += [f"{path.name}: heading {h.text!r} not in text layer" for h in heads if normalize(h.text) not in text]
        if outline != [h.text for h in heads]:
            errors.append(f"{path.name}: outline {outline} does not match headings")
    return errors


def _flatten(outline: list) -> list:
    items = []
    for entry in outline:
        items += _flatten(entry) if isinstance(entry, list) else [entry]
    return items


def check() -> list[str]:
    """Rebuild into a temp dir; verify every output and that the committed outputs are present and current."""
    errors: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for fresh in build(Path(tmp)):
            blocks = parse_markdown((SRC_DIR / f"{fresh.stem}.md").read_text(encoding="utf-8"))
            errors += _verify(fresh, blocks)
            shipped = KB_DIR / fresh.name
            if not shipped.exists():
                errors.append(f"{shipped.name}: missing; run scripts/build_demo_docs.py")
            elif normalize(extract_text(shipped)) != normalize(extract_text(fresh)):
                errors.append(f"{shipped.name}: stale; run scripts/build_demo_docs.py")
            for twin in (KB_DIR / f"{fresh.stem}.md", KB_DIR / f"{fresh.stem}.html"):
                if twin.exists():
                    errors.append(f"{twin.name}: duplicates generated {fresh.name}")
    return errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="rebuild into a temp dir and verify; write nothing")
    parser.add_argument("--out", type=Path, default=KB_DIR, help="output folder (default: demo/kb)")
    args = parser.parse_args(argv)
    if args.check:
        errors = check()
        for error in errors:
            print(f"ERROR {error}", file=sys.stderr)
        print(f"check {'FAILED' if errors else 'ok'}: {len(TARGETS)} generated files")
        return 1 if errors else 0
    for path in build(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
