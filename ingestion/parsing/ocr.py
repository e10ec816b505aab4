"""OCR with the Tesseract command line (Debian ``tesseract-ocr`` + a language pack such as ``tesseract-ocr-eng``).

Runs inside the isolated parser child: ``tesseract`` is a child of it, so it shares the parser's address-space limit
and is killed with it on a timeout. The languages come from ``KBQA_OCR_LANGUAGES`` (``eng``, ``eng+deu``, ...), set
by the isolation layer from ``Settings.ingestion.ocr_languages``; an empty value turns OCR off.

Every OCR'd page carries a confidence (Tesseract's mean word confidence, 0-100), kept in the element metadata as
``ocr_confidence`` and in ``ParsedDocument.ocr_confidence`` (page -> confidence).
"""

from __future__ import annotations

import csv
import functools
import io
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingestion.parsing import progress as parse_progress
from ingestion.parsing.model import parse_failed

LANGUAGES_ENV = "KBQA_OCR_LANGUAGES"
DEFAULT_LANGUAGES = "eng"
#: Rendering resolution for PDF pages, and the largest image (in pixels) handed to Tesseract.
DPI = 300
MAX_PIXELS = 40_000_000
#: Seconds one image may take in Tesseract; the parse timeout is the outer bound.
IMAGE_TIMEOUT_S = 180.0
#: A page whose words average below this confidence is treated as having no readable text (a photo, noise, a script
#: the configured languages do not cover); its confidence is still reported.
MIN_PAGE_CONFIDENCE = 40.0
#: Below this confidence a page is checked for rotation and read again upright.
RECHECK_BELOW = 60.0
ORIENTATION_MIN_CONFIDENCE = 1.0
INSTALL_HINT = "install Debian's tesseract-ocr and tesseract-ocr-eng (scripts/install-parsers.sh)"


@dataclass(slots=True)
class OcrLine:
    top: float  # pixels from the top of the image
    bottom: float
    text: str
    para: tuple[str, str] = ("", "")  # Tesseract's (block, paragraph) numbers


@dataclass(slots=True)
class OcrPage:
    lines: list[OcrLine] = field(default_factory=list)
    confidence: float | None = None  # mean word confidence 0-100; None when no word was found

    @property
    def unreadable(self) -> bool:
        """Words were found, but with too little confidence to keep them."""
        return not self.lines and self.confidence is not None

    def paragraphs(self) -> list[str]:
        out: dict[tuple[str, str], list[str]] = {}
        for ln in self.lines:
            out.setdefault(ln.para, []).append(ln.text)
        return [" ".join(parts) for parts in out.values()]


def languages() -> str:
    return os.environ.get(LANGUAGES_ENV, DEFAULT_LANGUAGES).strip()


def enabled() -> bool:
    return bool(languages())


@functools.lru_cache(maxsize=1)
def _installed_languages(binary: str) -> frozenset[str]:
    try:
        out = subprocess.run(
            [binary, "--list-langs"], capture_output=True, text=True, timeout=30, env=_env(), check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    lines = (out.stdout + "\n" + out.stderr).splitlines()
    return frozenset(ln.strip() for ln in lines if ln.strip() and " " not in ln.strip() and not ln.endswith(":"))


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["OMP_THREAD_LIMIT"] = "1"  # one core per parse; parallelism comes from parsing several files
    return env


def check_ready() -> str:
    """Return the tesseract binary; raise PARSE_FAILED with the reason when OCR cannot run here."""
    langs = languages()
    if not langs:
        raise parse_failed("OCR is turned off (KBQA_INGESTION__OCR_LANGUAGES is empty)")
    binary = shutil.which("tesseract")
    if binary is None:
        raise parse_failed(f"OCR is needed but Tesseract is not installed: {INSTALL_HINT}")
    have = _installed_languages(binary)
    missing = [lang for lang in langs.split("+") if lang and lang not in have]
    if missing:
        raise parse_failed(
            f"OCR language data not installed: {', '.join(missing)} (Debian: tesseract-ocr-<lang>; "
            f"installed: {', '.join(sorted(have - {'osd'})) or 'none'})"
        )
    return binary


def _parse_tsv(tsv: str) -> OcrPage:
    """Tesseract TSV -> lines (words joined per block/paragraph/line) and the mean word confidence."""
    lines: dict[tuple[str, str, str], list[tuple[float, float, str]]] = {}
    confs: list[float] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        try:
            conf = float(row.get("conf") or -1)
            top, height = float(row["top"]), float(row["height"])
        except (TypeError, ValueError, KeyError):
            continue
        if row.get("level") != "5" or conf < 0 or not text:
            continue
        confs.append(conf)
        lines.setdefault((row["block_num"], row["par_num"], row["line_num"]), []).append((top, top + height, text))
    page = OcrPage(confidence=round(sum(confs) / len(confs), 1) if confs else None)
    for key, words in lines.items():
        top, bottom = min(w[0] for w in words), max(w[1] for w in words)
        page.lines.append(OcrLine(top, bottom, " ".join(w[2] for w in words), (key[0], key[1])))
    page.lines.sort(key=lambda ln: ln.top)
    return page


def _tesseract(binary: str, src: Path, *args: str) -> tuple[int, str, str]:
    try:
        code, out, err = parse_progress.run([binary, str(src), "stdout", *args], IMAGE_TIMEOUT_S, env=_env())
    except subprocess.TimeoutExpired:
        raise parse_failed(f"OCR timed out after {IMAGE_TIMEOUT_S:g} s on one page") from None
    return code, out.decode("utf-8", errors="replace"), err.decode(errors="replace")


def _recognise(binary: str, image: Any, tmp: Path) -> OcrPage:
    src = tmp / "page.png"
    image.save(src, dpi=(DPI, DPI))
    code, out, err = _tesseract(binary, src, "-l", languages(), "--psm", "3", "tsv")
    if code != 0:
        detail = err.strip().splitlines()
        raise parse_failed(f"OCR failed ({detail[-1][:160] if detail else f'exit code {code}'})")
    return _parse_tsv(out)


def _rotation(binary: str, tmp: Path) -> int:
    """Degrees (counter-clockwise, for PIL) that turn the last recognised image upright, from Tesseract's
    orientation detection; 0 when it is upright or cannot tell."""
    code, out, _ = _tesseract(binary, tmp / "page.png", "--psm", "0")
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    try:
        rotate, confidence = int(fields["Rotate"].strip()), float(fields["Orientation confidence"].strip())
    except (KeyError, ValueError):
        return 0
    return (360 - rotate) % 360 if code == 0 and confidence >= ORIENTATION_MIN_CONFIDENCE else 0


def ocr_image(image: Any) -> OcrPage:
    """OCR one PIL image (any mode). A page read with low confidence is checked for rotation (90/180/270 degrees)
    and read again upright; the better reading is kept."""
    binary = check_ready()
    image = _bounded(image.convert("L"))
    with tempfile.TemporaryDirectory(prefix="kbqa-ocr-") as tmp:
        page = _recognise(binary, image, Path(tmp))
        if page.confidence is None or page.confidence < RECHECK_BELOW:
            angle = _rotation(binary, Path(tmp))
            if angle:
                upright = _recognise(binary, image.rotate(angle, expand=True, fillcolor=255), Path(tmp))
                if (upright.confidence or 0) > (page.confidence or 0):
                    page = upright
    if page.confidence is not None and page.confidence < MIN_PAGE_CONFIDENCE:
        page.lines = []  # noise, a photo, or a script the configured languages do not cover
    return page


def _bounded(image: Any) -> Any:
    w, h = image.size
    if w * h <= MAX_PIXELS:
        return image
    scale = (MAX_PIXELS / (w * h)) ** 0.5
    return image.resize((max(1, int(w * scale)), max(1, int(h * scale))))


def image_frames(data: bytes) -> list[Any]:
    """The frames (pages) of an image file as PIL images; a multi-page TIFF gives several."""
    from PIL import Image, ImageSequence, UnidentifiedImageError

    try:
        img = Image.open(io.BytesIO(data))
        frames = [frame.copy() for frame in ImageSequence.Iterator(img)]
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise parse_failed(f"corrupt or unsupported image ({str(exc)[:120] or type(exc).__name__})") from None
    except Image.DecompressionBombError:
        raise parse_failed("image is too large to OCR (decompression bomb check)") from None
    return frames


def render_pdf_page(pdf: Any, index: int) -> tuple[Any, float]:
    """Render page ``index`` of a ``pypdfium2.PdfDocument`` at ``DPI`` (less for huge pages) as a grey PIL image;
    return it with the scale used (pixels per PDF point)."""
    page = pdf[index]
    try:
        w, h = page.get_size()
        scale = DPI / 72
        if w * h * scale * scale > MAX_PIXELS:
            scale = (MAX_PIXELS / (w * h)) ** 0.5
        return page.render(scale=scale, grayscale=True).to_pil(), scale
    finally:
        page.close()
