"""HTML (BeautifulSoup) and Markdown (markdown-it) into structural elements."""

from __future__ import annotations

import re
from typing import Any

from ingestion.parsing.model import ElementBuilder, header_rows, tidy_figures

_SKIP = {"script", "style", "noscript", "template", "svg", "head", "iframe", "object", "button", "select", "canvas"}
_BLOCK = {
    "p",
    "div",
    "section",
    "article",
    "ul",
    "ol",
    "dl",
    "dt",
    "dd",
    "blockquote",
    "header",
    "footer",
    "main",
    "nav",
    "aside",
    "figure",
    "figcaption",
    "form",
    "hr",
    "address",
    "body",
    "html",
    "tr",
    "center",
    "details",
    "summary",
}
_HEADING = re.compile(r"^h([1-6])$")


def _table_rows(table: Any) -> list[list[str]]:
    """The table's rows as a grid: a cell spanning columns (``colspan``) fills them all in header rows and its first
    one (the rest empty) in body rows, so values stay under their headings; see :func:`tidy_figures`."""
    rows: list[list[tuple[str, int]]] = []
    for tr in table.find_all("tr"):
        if tr.find_parent("table") is not table:
            continue  # rows of a nested table are part of their cell's text
        cells = [(c.get_text(" ", strip=True), _span(c)) for c in tr.find_all(["td", "th"], recursive=False)]
        if cells:
            rows.append(cells)
    heads = header_rows([[text for text, _ in row] for row in rows])
    grid = []
    for i, row in enumerate(rows):
        out: list[str] = []
        for text, span in row:
            out += [text] * span if i < heads else [text] + [""] * (span - 1)
        grid.append(out)
    return tidy_figures(grid, heads)


def _span(cell: Any) -> int:
    try:
        return max(1, min(int(str(cell.get("colspan", 1)).strip()), 50))
    except ValueError:
        return 1


class _HtmlWalker:
    def __init__(self, builder: ElementBuilder) -> None:
        self.builder = builder
        self.buf: list[str] = []

    def flush(self) -> None:
        text = "".join(self.buf)
        self.buf.clear()
        self.builder.add("text", text)

    def walk(self, node: Any) -> None:
        from bs4.element import Comment, NavigableString, Tag

        for child in node.children:
            if isinstance(child, Comment):
                continue
            if isinstance(child, NavigableString):
                self.buf.append(str(child))
                continue
            if not isinstance(child, Tag):
                continue
            name = child.name.lower()
            if name in _SKIP:
                continue
            m = _HEADING.match(name)
            if m:
                self.flush()
                self.builder.title(child.get_text(" ", strip=True), int(m.group(1)))
            elif name == "table":
                self.flush()
                rows = _table_rows(child)
                has_head = child.find("th") is not None or len(rows) > 1
                self.builder.table(rows, header=has_head)
            elif name == "pre":
                self.flush()
                self.builder.add("code", child.get_text(), keep_layout=True)
            elif name == "li":
                self.flush()
                nested = [c.extract() for c in child.find_all(["ul", "ol"])]
                marker = "-"
                if node.name == "ol":
                    marker = f"{1 + sum(1 for s in child.find_previous_siblings('li'))}."
                self.builder.add("list_item", child.get_text(" ", strip=True), marker=marker)
                for sub in nested:
                    self.walk(sub)
            elif name == "br":
                self.buf.append("\n")
            elif name in _BLOCK:
                self.flush()
                self.walk(child)
                self.flush()
            else:
                self.walk(child)


def html_into(html: str, builder: ElementBuilder) -> str:
    """Append the elements of an HTML document to ``builder``; return the document's <title> (may be empty)."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "lxml")
    title_tag = soup.find("title")
    title = title_tag.get_text(" ", strip=True) if title_tag else ""
    walker = _HtmlWalker(builder)
    walker.walk(soup.body or soup)
    walker.flush()
    return title


def markdown_into(text: str, builder: ElementBuilder) -> None:
    """Append the elements of a Markdown document (CommonMark + tables) to ``builder``."""
    from markdown_it import MarkdownIt

    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    i = 0
    row: list[str] = []
    rows: list[list[str]] = []
    lists: list[int | None] = []  # open lists, innermost last: the current item number (None: a bullet list)
    while i < len(tokens):
        tok = tokens[i]
        t = tok.type
        if t == "heading_open":
            builder.title(tokens[i + 1].content, int(tok.tag[1]))
            i += 2
        elif t == "bullet_list_open":
            lists.append(None)
        elif t == "ordered_list_open":
            lists.append(int(tok.attrs.get("start") or 1) - 1)
        elif t in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif t == "list_item_open" and lists and lists[-1] is not None:
            lists[-1] += 1
        elif t == "inline" and tokens[i - 1].type == "paragraph_open":
            if lists:
                builder.add("list_item", tok.content, marker="-" if lists[-1] is None else f"{lists[-1]}.")
            else:
                builder.add("text", tok.content)
        elif t in ("fence", "code_block"):
            builder.add("code", tok.content, keep_layout=True, language=tok.info.strip())
        elif t == "html_block":
            html_into(tok.content, builder)
        elif t == "tr_open":
            row = []
        elif t == "inline" and tokens[i - 1].type in ("th_open", "td_open"):
            row.append(tok.content)
        elif t == "tr_close":
            rows.append(row)
        elif t == "table_close":
            builder.table(rows)
            rows = []
        i += 1
