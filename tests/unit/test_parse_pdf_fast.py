"""PDF pages without table ruling are read by PDFium, and give the lines pdfplumber gives; pages that may hold a ruled
table, and rotated text, are still read by pdfplumber, which finds the tables."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from ingestion.parsing import pdf

pytestmark = pytest.mark.unit

DEMO_PDF = Path(__file__).resolve().parents[2] / "demo" / "kb" / "troubleshooting-guide.pdf"


def _pages(data: bytes) -> tuple[Any, Any]:
    import pdfplumber
    import pypdfium2

    return pdfplumber.open(io.BytesIO(data)), pypdfium2.PdfDocument(data)


def _text_pdf() -> bytes:
    pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setFont("Helvetica-Bold", 18)
    c.drawString(72, 780, "Resetting the hub")
    c.setFont("Helvetica", 10)
    c.drawString(72, 750, "Hold the button for ten seconds until the light blinks.")
    c.drawString(72, 736, "The hub restarts and keeps its devices.")
    # words placed apart with no space character between them: a word break all the same
    c.drawString(72, 700, "Serial")
    c.drawString(110, 700, "number")
    c.drawString(72, 680, "Subscript H")
    c.setFont("Helvetica", 6)
    c.drawString(129, 678, "2")
    c.setFont("Helvetica", 10)
    c.drawString(135, 680, "O and the filter")
    c.showPage()
    c.save()
    return buf.getvalue()


def _table_pdf() -> bytes:
    pytest.importorskip("reportlab")
    from reportlab.lib import colors
    from reportlab.lib.pagesizes import A4
    from reportlab.platypus import SimpleDocTemplate, Table, TableStyle

    buf = io.BytesIO()
    table = Table([["Code", "Meaning"], ["E19", "Card unreadable"], ["E31", "Low voltage"]])
    table.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.5, colors.black)]))
    SimpleDocTemplate(buf, pagesize=A4).build([table])
    return buf.getvalue()


def _rows(lines: list[pdf._Line]) -> list[tuple[str, float, float, float, float]]:
    return [(ln.text, ln.size, round(ln.top, 1), round(ln.bottom, 1), round(ln.x0, 1)) for ln in lines]


def test_a_page_without_ruling_gives_pdfplumbers_lines_from_pdfium() -> None:
    plumber, fast = _pages(_text_pdf())
    slow_lines, slow_images = pdf._page_lines(plumber.pages[0], 1)
    found = pdf._fast_page_lines(fast[0], 1)
    assert found is not None, "a page of text alone is read by PDFium"
    lines, images = found
    assert images is slow_images is False
    texts = [ln.text for ln in lines]
    assert texts[:3] == ["Resetting the hub", "Hold the button for ten seconds until the light blinks.",
                         "The hub restarts and keeps its devices."]
    assert "Serial number" in texts
    assert "Subscript H O and the filter" in texts and "2" in texts  # the subscript is a line of its own, as before
    # sizes, tops, bottoms and left edges as pdfminer computes them (within rounding), so headings, paragraphs and
    # list items come out the same
    for mine, theirs in zip(_rows(lines), _rows(slow_lines), strict=True):
        assert mine[1] == theirs[1]
        assert mine[2:] == pytest.approx(theirs[2:], abs=0.6)


def test_the_demo_manual_parses_to_the_same_elements_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    data = DEMO_PDF.read_bytes()
    fast = [(e.kind, e.level, e.page, e.text) for e in pdf.parse_pdf(data).elements]
    monkeypatch.setattr(pdf, "_fast_page_lines", lambda page, number: None)
    # tables looked for by pdfplumber, the text still PDFium's; then pdfplumber alone
    ruled = [(e.kind, e.level, e.page, e.text) for e in pdf.parse_pdf(data).elements]
    monkeypatch.setattr(pdf, "_pdfium_chars", lambda page: None)
    slow = [(e.kind, e.level, e.page, e.text) for e in pdf.parse_pdf(data).elements]
    assert fast == ruled == slow


def test_a_page_that_may_hold_a_ruled_table_is_left_to_pdfplumber() -> None:
    data = _table_pdf()
    _, fast = _pages(data)
    assert pdf._fast_page_lines(fast[0], 1) is None
    doc = pdf.parse_pdf(data)
    tables = [e for e in doc.elements if e.kind == "table"]
    assert len(tables) == 1 and "E19" in tables[0].text and "Card unreadable" in tables[0].text


def test_edges_are_counted_in_their_orientation_on_the_page() -> None:
    acc = [0, 0, 0]
    pdf._count_edge((0.0, 0.0), (50.0, 0.0), acc)  # across
    pdf._count_edge((0.0, 0.0), (0.0, 50.0), acc)  # down
    pdf._count_edge((0.0, 0.0), (30.0, 40.0), acc)  # slanted: no table edge
    pdf._count_edge((0.0, 0.0), (0.4, 0.0), acc)  # a dot: too short even to join into one
    assert acc == [1, 1, 0]


def test_rotated_text_is_left_to_pdfplumber() -> None:
    pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.saveState()
    c.translate(300, 400)
    c.rotate(90)
    c.drawString(0, 0, "Sideways label")
    c.restoreState()
    c.showPage()
    c.save()
    _, fast = _pages(buf.getvalue())
    assert pdf._fast_page_lines(fast[0], 1) is None


def test_a_page_shown_turned_is_read_in_its_own_upright_lines() -> None:
    """/Rotate 90 turns the page on screen only; its text runs upright in the page's own coordinates. pdfminer reads it
    turned (a word or two per line: "Subscript Serial", "The Hold"); PDFium reads it line by line."""
    import pikepdf

    with pikepdf.open(io.BytesIO(_text_pdf())) as doc:
        doc.pages[0].Rotate = 90
        out = io.BytesIO()
        doc.save(out)
    elements = pdf.parse_pdf(out.getvalue()).elements
    assert (elements[0].kind, elements[0].text) == ("title", "Resetting the hub")
    assert elements[1].text.startswith("Hold the button for ten seconds until the light blinks.")


_LEFT = ("The Hub keeps running on its backup battery for about four hours when the power fails. Automations that use "
         "only devices connected to the Hub keep working during the outage, and the Hub reconnects to the cloud by "
         "itself when the power returns. Charge the battery fully before you rely on it: a new Hub ships with it half "
         "charged, and it takes about six hours on the adapter to fill.")
_RIGHT = ("Cameras record to their microSD card while the internet is down and upload the clips later. Live view is "
          "not available until the connection returns, and motion alerts that were missed are shown in the timeline "
          "afterwards. A card of at least 32 GB holds about a week of events; when it is full, the oldest clips are "
          "overwritten first, unless you have marked them as saved in the app.")


def _wrap(text: str, widths: list[float]) -> list[str]:
    """``text`` in Helvetica 10 lines, the n-th at most ``widths[n]`` points wide (the last width repeated)."""
    from reportlab.pdfbase.pdfmetrics import stringWidth

    out: list[str] = []
    words = text.split(" ")
    while words:
        width = widths[min(len(out), len(widths) - 1)]
        line = words.pop(0)
        while words and stringWidth(f"{line} {words[0]}", "Helvetica", 10) <= width:
            line += " " + words.pop(0)
        out.append(line)
    return out


def _two_column_pdf(*, labels: bool = False, ragged: bool = False) -> bytes:
    """A title over two columns of prose (``labels``: short terms on the left, a description beside each instead;
    ``ragged``: the left column's lines mostly short, two of them reaching close to the right column)."""
    pytest.importorskip("reportlab")
    from reportlab.lib.pagesizes import A4
    from reportlab.lib.utils import simpleSplit
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=A4)
    c.setFont("Helvetica-Bold", 16)
    c.drawString(56, 790, "When the power or the internet fails")
    c.setFont("Helvetica", 10)
    if labels:
        terms = ["Battery", "Cloud", "Alerts", "Storage", "Live view", "Timeline"]
        for i, (term, line) in enumerate(zip(terms, simpleSplit(_RIGHT, "Helvetica", 10, 230), strict=False)):
            c.drawString(56, 750 - 14 * i, term)
            c.drawString(310, 750 - 14 * i, line)
    else:
        left = _wrap(_LEFT, [180, 180, 180, 232, 232, 180]) if ragged else simpleSplit(_LEFT, "Helvetica", 10, 230)
        for x, lines in ((56, left), (310, simpleSplit(_RIGHT, "Helvetica", 10, 230))):
            for i, line in enumerate(lines):
                c.drawString(x, 750 - 14 * i, line)
    c.setFont("Helvetica", 8)
    c.drawString(56, 40, "Kestrel Hub User Manual")  # a footer in the left column's width
    c.showPage()
    c.save()
    return buf.getvalue()


@pytest.mark.parametrize("reader", ["pdfium", "pdfplumber tables, pdfium text", "pdfplumber"])
def test_a_page_in_two_columns_is_read_column_by_column(monkeypatch: pytest.MonkeyPatch, reader: str) -> None:
    if reader != "pdfium":
        monkeypatch.setattr(pdf, "_fast_page_lines", lambda page, number: None)
    if reader == "pdfplumber":
        monkeypatch.setattr(pdf, "_pdfium_chars", lambda page: None)
    doc = pdf.parse_pdf(_two_column_pdf())
    texts = [e.text for e in doc.elements]
    # read across the page, every line joined the left column's line to the right one's and no sentence survived
    assert texts[0] == "When the power or the internet fails"
    assert texts[1:3] == [_LEFT, _RIGHT]
    assert texts[3:] == ["Kestrel Hub User Manual"]


def test_the_cleanest_gutter_is_taken_so_long_lines_of_a_ragged_column_stay_in_it() -> None:
    # a strip from the short lines' end to the right column is crossed by two long lines only; read as the gutter, those
    # two rows (with the right column's lines beside them) were read whole, across both columns
    texts = [e.text for e in pdf.parse_pdf(_two_column_pdf(ragged=True)).elements]
    assert texts == ["When the power or the internet fails", _LEFT, _RIGHT, "Kestrel Hub User Manual"]


def test_short_terms_beside_their_descriptions_stay_row_by_row() -> None:
    texts = [e.text for e in pdf.parse_pdf(_two_column_pdf(labels=True)).elements]
    assert any(t.startswith("Battery Cameras record to their microSD card") for t in texts), texts


def _ruled_page_with_tight_words() -> bytes:
    """A ruled table (so pdfplumber looks for tables on the page) and a sentence set word by word, 2.5 pt apart and
    no space character between them, as tightly justified lines are."""
    pytest.importorskip("reportlab")
    from reportlab.pdfbase.pdfmetrics import stringWidth
    from reportlab.pdfgen import canvas

    buf = io.BytesIO()
    c = canvas.Canvas(buf, pagesize=(595, 842))
    c.setFont("Helvetica", 10)
    x = 72.0
    sentence = "Recording and compiling a trace speculates that the path stays the same."
    for word in sentence.split(" "):
        c.drawString(x, 760, word)
        x += stringWidth(word, "Helvetica", 10) + 2.5
    for i in range(4):  # a 3 x 3 grid
        c.line(72, 700 - 20 * i, 372, 700 - 20 * i)
        c.line(72 + 100 * i, 700, 72 + 100 * i, 640)
    grid = [["Code", "Meaning", "Step"], ["E19", "Card unreadable", "Format it"], ["E31", "Low", "Wire"]]
    for r, row in enumerate(grid):
        for k, cell in enumerate(row):
            c.drawString(76 + 100 * k, 686 - 20 * r, cell)
    c.showPage()
    c.save()
    return buf.getvalue()


def test_a_ruled_page_keeps_pdfplumbers_tables_and_pdfiums_word_breaks() -> None:
    data = _ruled_page_with_tight_words()
    _, fast = _pages(data)
    assert pdf._fast_page_lines(fast[0], 1) is None, "a page with ruling is left to pdfplumber's table finder"
    doc = pdf.parse_pdf(data)
    assert [e.kind for e in doc.elements] == ["text", "table"]
    # pdfminer runs words less than 3 pt apart together ("Recordingandcompilingatrace..."); PDFium sees the gaps
    assert doc.elements[0].text == "Recording and compiling a trace speculates that the path stays the same."
    assert "| E19 | Card unreadable | Format it |" in doc.elements[1].text
