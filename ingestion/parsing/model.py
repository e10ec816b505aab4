"""The parser output type and the helpers every format parser shares (heading stack, Markdown tables)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import AppError, ErrorCode
from core.types import Element

#: Rows kept per table/sheet; a spreadsheet larger than this is truncated with a warning.
MAX_TABLE_ROWS = 2000
_WS = re.compile(r"[ \t\r\f\v]+")


#: Titles that authoring tools write when the author wrote none: reportlab's "(anonymous)", "Untitled spreadsheet",
#: Office's "Document1", "Word Document" and "PowerPoint Presentation", a print driver's "Print" or "Microsoft Word -
#: report.docx", a bare file name ("loremipsum.jpg"). Such a title would head every answer ("From *(anonymous) ›
#: Results of Operations*"), so the document's first heading (or, without one, its file name) is used instead.
_PLACEHOLDER_TITLE = re.compile(
    r"^\(?(?:anonymous|print|untitled(?:[\s_-]*(?:document|presentation|spreadsheet))?(?:[\s_-]*\d+)?|no\s+title|"
    r"title|document\s*\d*|(?:microsoft\s+)?(?:powerpoint\s+)?presentation\s*\d*|slide\s*\d+|word\s+document)\)?$"
    r"|^microsoft\s+(?:office\s+)?(?:word|powerpoint|excel)\s+-\s"
    r"|\.(?:docx?|pdf|pptx?|xlsx?|rtf|odt|odp|ods|indd|qxd|qxp|txt|tex|dvi|e?ps|jpe?g|png|tiff?|gif|bmp)$"
    r"|^[\W\d_]*$",
    re.IGNORECASE,
)


def metadata_title(raw: object) -> str:
    """A title from a file's metadata, or "" when it is empty or an authoring tool's placeholder (see above)."""
    title = _WS.sub(" ", str(raw or "")).strip()
    return "" if _PLACEHOLDER_TITLE.search(title) else title


@dataclass(slots=True)
class ParsedDocument:
    """What a parser hands to the chunker: ordered structural elements plus document-level facts."""

    title: str
    mime_type: str
    doc_type: str
    elements: list[Element] = field(default_factory=list)
    page_count: int | None = None
    encoding: str | None = None
    warnings: list[str] = field(default_factory=list)
    #: Pages read by OCR -> Tesseract's mean word confidence (0-100); their elements carry ``ocr_confidence`` too.
    ocr_confidence: dict[int, float] = field(default_factory=dict)


def parse_failed(reason: str) -> AppError:
    return AppError(ErrorCode.PARSE_FAILED, reason)


def clean(text: str) -> str:
    """Collapse runs of blanks inside lines, drop NULs and trailing spaces; keep line breaks."""
    text = text.replace("\x00", "").replace("\u00a0", " ")
    lines = [_WS.sub(" ", line).strip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return _WS.sub(" ", text.replace("\n", " ")).strip().replace("|", "\\|")


def markdown_table(rows: Sequence[Sequence[Any]], *, header: bool = True) -> str:
    """Render rows as a Markdown table; the first row is the header (a blank header is synthesised if ``header`` is
    false). Empty rows and all-empty columns are dropped; ragged rows are padded."""
    grid = [[_cell(c) for c in row] for row in rows]
    grid = [row for row in grid if any(row)]
    if not grid:
        return ""
    width = max(len(r) for r in grid)
    grid = [r + [""] * (width - len(r)) for r in grid]
    keep = [j for j in range(width) if any(r[j] for r in grid)]
    grid = [[r[j] for j in keep] for r in grid]
    if not header:
        grid.insert(0, [f"col{j + 1}" for j in range(len(keep))])
    head, body = grid[0], grid[1:]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


#: A cell that is one figure: "294,866", "(1,204)", "6.08", "12%", "$ 3", "-"; a currency sign alone is its own cell
#: in statements exported from accounting tools ("$" | "294,866").
_FIGURE = re.compile(r"^[(\-−–]?\s*[$€£¥]?\s*\d[\d,]*(?:\.\d+)?\s*%?\)?$|^[\-—–]$")
_CURRENCY = re.compile(r"^[$€£¥]$")
_CLOSING = re.compile(r"^(?:%|\)|%\))$")
_YEAR = re.compile(r"^(?:19|20)\d\d$")  # a column heading, not a figure


def header_rows(rows: list[list[str]]) -> int:
    """How many leading rows head a table of figures: the first, and up to two more that have an empty first cell
    and no figure but years (a statement's "Years ended" / "September 28, 2024" or "2024" rows above a stub column);
    1 otherwise."""
    if not rows or not any(_FIGURE.match(c) for row in rows for c in row[1:] if c):
        return min(1, len(rows))
    n = 1
    while (
        n < min(3, len(rows))
        and not (rows[0][0] if rows[0] else "")
        and not (rows[n][0] if rows[n] else "")
        and not any(_FIGURE.match(c) and not _YEAR.match(c) for c in rows[n] if c)
    ):
        n += 1
    return n


def tidy_figures(grid: list[list[str]], heads: int) -> list[list[str]]:
    """A table of figures as a reader wants it: a lone currency sign joined to the figure after it ("$" "294,866" ->
    "$294,866") and a lone "%" or ")" to the one before, header rows merged into one ("Years ended September 28,
    2024"), and the columns no body row fills (spacers, the emptied sign columns) dropped. Other tables are returned
    as they are."""
    if heads < 1 or not any(_FIGURE.match(c) for row in grid[heads:] for c in row[1:] if c):
        return grid
    width = max(len(r) for r in grid)
    grid = [r + [""] * (width - len(r)) for r in grid]
    for row in grid[heads:]:
        for j, cell in enumerate(row):
            if _CURRENCY.match(cell):
                nxt = next((k for k in range(j + 1, width) if row[k]), None)
                if nxt is not None and _FIGURE.match(row[nxt]):
                    row[nxt], row[j] = f"{cell}{row[nxt]}", ""
            elif _CLOSING.match(cell):
                prev = next((k for k in range(j - 1, 0, -1) if row[k]), None)
                if prev is not None and _FIGURE.match(row[prev]):
                    row[prev], row[j] = f"{row[prev]}{cell}", ""
    keep = [0] + [j for j in range(1, width) if any(r[j] for r in grid[heads:])]
    header = [" ".join(dict.fromkeys(r[j] for r in grid[:heads] if r[j])) for j in keep]
    return [header] + [[r[j] for j in keep] for r in grid[heads:]]


class ElementBuilder:
    """Collects elements and keeps the heading stack, so every element gets its ``section_path``."""

    def __init__(self) -> None:
        self.elements: list[Element] = []
        self._stack: list[tuple[int, str]] = []

    @property
    def section_path(self) -> tuple[str, ...]:
        return tuple(t for _, t in self._stack)

    def title(self, text: str, level: int, *, page: int | None = None) -> None:
        text = clean(text).replace("\n", " ")
        if not text:
            return
        level = max(1, level)
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text[:200]))
        self.elements.append(Element("title", text, level=level, page=page, section_path=self.section_path))

    def elements_stack_pop(self) -> None:
        """Forget the innermost heading (used when a multi-line heading is re-emitted as one title)."""
        if self._stack:
            self._stack.pop()

    def reset_sections(self) -> None:
        self._stack.clear()

    def add(self, kind: str, text: str, *, page: int | None = None, keep_layout: bool = False, **meta: Any) -> None:
        text = text.strip("\n") if keep_layout else clean(text)
        if not text.strip():
            return
        self.elements.append(Element(kind, text, page=page, section_path=self.section_path, metadata=dict(meta)))

    def table(self, rows: Sequence[Sequence[Any]], *, page: int | None = None, header: bool = True) -> None:
        md = markdown_table(rows[: MAX_TABLE_ROWS + 1], header=header)
        if md:
            self.elements.append(Element("table", md, page=page, section_path=self.section_path))

    def first_title(self, preamble_words: int = 12) -> str:
        """The document's title: its first heading, when at most ``preamble_words`` words of text come before it (a
        "Draft" line, a cover page's running head); "" otherwise, and the pipeline titles the document by its file
        name. A heading that follows the body's opening paragraph titles its own section, not the document: a help
        page exported without its page title, starting "After you sell or give away a vehicle, you can transfer the
        registration ...", was titled by its third paragraph's heading, "Bring these items to a DMV office", and its
        opening passage (the answer to "do I need the title to transfer a registration to another car?") was cited
        under that name."""
        words = 0
        for e in self.elements:
            if e.kind == "title":
                return e.text
            words += len(e.text.split())
            if words > preamble_words:
                return ""
        return ""
