"""Real Tesseract and real LibreOffice in the isolated parser: scanned PDFs, images, image-only slides and legacy /
OpenDocument files become text; long PDFs are read to their last page. Every test file is generated here.

Needs Debian's tesseract-ocr, tesseract-ocr-eng and libreoffice-*-nogui (``scripts/install-parsers.sh``, run by
``make install-test``).
"""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from core.errors import AppError, ErrorCode
from ingestion.parsing import ParseOptions, parse_file

pytestmark = pytest.mark.integration

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="Tesseract is not installed (scripts/install-parsers.sh)"
)
needs_soffice = pytest.mark.skipif(
    shutil.which("soffice") is None, reason="LibreOffice is not installed (scripts/install-parsers.sh)"
)
LINES = ["Kestrel Hub warranty", "The warranty lasts 24 months", "Contact support for a replacement"]


def _text_image(lines: list[str], size: tuple[int, int] = (1700, 1000)):  # noqa: ANN202 - a PIL image
    from PIL import Image, ImageDraw, ImageFont

    img = Image.new("L", size, 255)
    draw = ImageDraw.Draw(img)
    font = ImageFont.load_default(size=56)
    for i, line in enumerate(lines):
        draw.text((90, 90 + i * 110), line, fill=0, font=font)
    return img


def _words(doc) -> str:  # noqa: ANN001
    return " ".join(e.text for e in doc.elements).lower()


def _parse(path: Path, **options: object):  # noqa: ANN202
    return parse_file(path, filename=path.name, timeout_s=60, options=ParseOptions(**options))  # type: ignore[arg-type]


def _failure(path: Path, **options: object) -> str:
    with pytest.raises(AppError) as err:
        _parse(path, **options)
    assert err.value.code == ErrorCode.PARSE_FAILED
    return err.value.message


@needs_tesseract
def test_png_and_multi_page_tiff_are_read_by_ocr_with_confidence(tmp_path: Path) -> None:
    png = tmp_path / "notice.png"
    _text_image(LINES).save(png)
    doc = _parse(png)
    assert doc.doc_type == "image" and doc.mime_type == "image/png"
    assert "warranty lasts 24 months" in _words(doc)
    assert doc.ocr_confidence[1] > 70
    assert all(e.metadata["ocr_confidence"] == doc.ocr_confidence[1] for e in doc.elements)
    tiff = tmp_path / "fax.tiff"
    first, second = _text_image(LINES[:1]), _text_image(["Second page says goodbye"])
    first.save(tiff, save_all=True, append_images=[second])
    doc = _parse(tiff)
    assert doc.page_count == 2 and set(doc.ocr_confidence) == {1, 2}
    assert [e.page for e in doc.elements if "goodbye" in e.text.lower()] == [2]
    # a page scanned sideways is turned upright (Tesseract's orientation detection) and read again
    sideways = tmp_path / "sideways.png"
    _text_image(LINES).rotate(90, expand=True, fillcolor=255).save(sideways)
    doc = _parse(sideways)
    assert "warranty lasts 24 months" in _words(doc) and doc.ocr_confidence[1] > 70


@needs_tesseract
def test_scanned_pages_are_ocrd_and_text_pages_keep_their_text_layer(tmp_path: Path) -> None:
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    pdf = tmp_path / "mixed.pdf"
    c = canvas.Canvas(str(pdf), pagesize=(612, 792))
    c.setFont("Helvetica", 12)
    c.drawString(72, 700, "Typed page one: the reset button is on the back.")
    c.showPage()
    buf = io.BytesIO()
    _text_image(LINES).save(buf, format="PNG")
    c.drawImage(ImageReader(io.BytesIO(buf.getvalue())), 0, 300, width=612, height=360)
    c.showPage()
    c.save()
    doc = _parse(pdf)
    by_page = {p: " ".join(e.text for e in doc.elements if e.page == p).lower() for p in (1, 2)}
    assert "reset button is on the back" in by_page[1]
    assert "warranty lasts 24 months" in by_page[2]
    assert set(doc.ocr_confidence) == {2}  # page 1 kept its text layer
    assert all("ocr_confidence" not in e.metadata for e in doc.elements if e.page == 1)
    assert all(e.metadata["ocr_confidence"] > 70 for e in doc.elements if e.page == 2)
    # a fully scanned PDF (Pillow writes image-only pages)
    scan = tmp_path / "scan.pdf"
    _text_image(LINES).save(scan, resolution=200)
    assert "contact support for a replacement" in _words(_parse(scan))


@needs_tesseract
def test_ocr_settings_and_a_missing_tesseract_give_clear_reasons(tmp_path: Path, monkeypatch) -> None:  # noqa: ANN001
    png = tmp_path / "notice.png"
    _text_image(LINES).save(png)
    assert _failure(png, ocr_languages="klingon").startswith("OCR language data not installed: klingon")
    assert _failure(png, ocr_languages="") == "OCR is turned off (KBQA_INGESTION__OCR_LANGUAGES is empty)"
    scan = tmp_path / "scan.pdf"
    _text_image(LINES).save(scan, resolution=200)
    assert _failure(scan, ocr_languages="") == (
        "scanned PDF without text layer, and OCR is turned off (KBQA_INGESTION__OCR_LANGUAGES is empty)"
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # the child still starts (absolute interpreter path)
    assert "Tesseract is not installed" in _failure(png)
    blank = tmp_path / "blank.png"
    _text_image([]).save(blank)
    monkeypatch.undo()
    assert _failure(blank) == "no text found in the image (OCR read no words)"


@needs_tesseract
def test_image_only_slides_are_ocrd(tmp_path: Path) -> None:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[6])  # blank layout: no title, no text
    buf = io.BytesIO()
    _text_image(LINES).save(buf, format="PNG")
    buf.seek(0)
    slide.shapes.add_picture(buf, Inches(0.5), Inches(0.5), width=Inches(9))
    text_slide = deck.slides.add_slide(deck.slide_layouts[1])
    text_slide.shapes.title.text = "Typed slide"
    path = tmp_path / "scanned-deck.pptx"
    deck.save(str(path))
    doc = _parse(path)
    assert "warranty lasts 24 months" in " ".join(e.text for e in doc.elements if e.page == 1).lower()
    assert set(doc.ocr_confidence) == {1}


def _soffice(src: Path, target: str, outdir: Path) -> Path:
    profile = outdir / "profile"
    subprocess.run(
        ["soffice", f"-env:UserInstallation={profile.as_uri()}", "--headless", "--convert-to", target,
         "--outdir", str(outdir), str(src)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    out = outdir / f"{src.stem}.{target}"
    assert out.exists()
    return out


@pytest.fixture(scope="module")
def office_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Modern files made with python-docx/pptx/openpyxl, saved by LibreOffice itself as .doc/.odt/.ppt/.odp/.xls/.ods;
    an RTF written by hand."""
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed (scripts/install-parsers.sh)")
    import docx
    import openpyxl
    import pptx

    d = tmp_path_factory.mktemp("office")
    word = docx.Document()
    word.add_heading("Returns policy", 1)
    word.add_paragraph("Customers may return the Kestrel Hub within 30 days.")
    word.save(str(d / "policy.docx"))
    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Quarterly support review"
    slide.placeholders[1].text = "Ticket volume fell by 12 percent"
    deck.save(str(d / "review.pptx"))
    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Prices"
    sheet.append(["Product", "Price"])
    sheet.append(["Kestrel Hub", 129])
    book.save(str(d / "prices.xlsx"))
    files = {
        "doc": _soffice(d / "policy.docx", "doc", d),
        "odt": _soffice(d / "policy.docx", "odt", d),
        "ppt": _soffice(d / "review.pptx", "ppt", d),
        "odp": _soffice(d / "review.pptx", "odp", d),
        "xls": _soffice(d / "prices.xlsx", "xls", d),
        "ods": _soffice(d / "prices.xlsx", "ods", d),
    }
    rtf = d / "memo.rtf"
    rtf.write_text(r"{\rtf1\ansi{\fonttbl{\f0 Helvetica;}}\f0\fs24 Memo: the office closes at noon on Friday.\par}")
    files["rtf"] = rtf
    return files


@needs_soffice
@pytest.mark.parametrize(
    ("doc_type", "expected"),
    [
        ("doc", "return the kestrel hub within 30 days"),
        ("odt", "return the kestrel hub within 30 days"),
        ("rtf", "the office closes at noon on friday"),
        ("ppt", "ticket volume fell by 12 percent"),
        ("odp", "ticket volume fell by 12 percent"),
        ("xls", "| kestrel hub | 129 |"),
        ("ods", "| kestrel hub | 129 |"),
    ],
)
def test_legacy_and_opendocument_files_are_converted_by_libreoffice(
    office_files: dict[str, Path], doc_type: str, expected: str
) -> None:
    doc = _parse(office_files[doc_type])
    assert doc.doc_type == doc_type
    assert expected in _words(doc)
    if doc_type in ("doc", "odt"):
        assert [(e.kind, e.text) for e in doc.elements][0] == ("title", "Returns policy")


@needs_soffice
def test_damaged_legacy_file_and_conversion_timeout_fail_clearly(tmp_path: Path, office_files) -> None:  # noqa: ANN001
    broken = tmp_path / "broken.doc"
    broken.write_bytes(office_files["doc"].read_bytes()[:1536])  # OLE header and a cut directory
    message = _failure(broken)
    assert message.startswith("LibreOffice could not ") or message.startswith("corrupt"), message
    # LibreOffice 7.4 converts this .ppt in under a second on an idle machine: the timeout must be honoured as set
    assert _failure(office_files["ppt"], convert_timeout_s=0.05) == (
        "LibreOffice conversion of .ppt timed out after 0.05 s"
    )


def _long_pdf(path: Path, pages: int) -> None:
    from reportlab.pdfgen import canvas

    c = canvas.Canvas(str(path), pagesize=(612, 792))
    for n in range(1, pages + 1):
        c.setFont("Helvetica", 9)
        c.drawString(72, 760, "Kestrel Hub service manual")  # a running header and footer, dropped on every page
        c.drawString(300, 40, f"Page {n}")
        c.setFont("Helvetica", 11)
        for row in range(30):
            part = ("fan", "filter", "hinge", "relay", "sensor", "valve", "belt")[(n + row) % 7]
            c.drawString(72, 720 - row * 20, f"Page {n} line {row}: maintenance step {n}.{row} checks the {part}.")
        c.showPage()
    c.save()


def test_a_long_pdf_is_read_to_its_last_page_or_fails_saying_why(tmp_path: Path) -> None:
    """The timeout counts from the last page parsed: a PDF whose parse takes longer than the timeout is read to the
    end (and the page limit fails it with its reason, before parsing)."""
    import time

    pdf = tmp_path / "manual.pdf"
    _long_pdf(pdf, 60)
    seen: list[tuple[int, int]] = []
    started = time.monotonic()
    doc = parse_file(pdf, filename=pdf.name, timeout_s=2, on_progress=lambda d, t: seen.append((d, t)))
    took = time.monotonic() - started
    assert not doc.warnings and doc.page_count == 60
    assert "maintenance step 60.29 checks the" in _words(doc)
    assert max(e.page or 0 for e in doc.elements) == 60
    assert "service manual" not in _words(doc)
    assert seen[-1] == (60, 60)
    print(f"60 pages in {took:.1f} s with a 2 s timeout")  # ~15 s here; the unit tests pin the timeout rule
    assert _failure(pdf, max_pages=50) == (
        "document has 60 pages, over the limit of 50 (KBQA_INGESTION__PARSE_MAX_PAGES); "
        "nothing was indexed rather than a part of it"
    )
