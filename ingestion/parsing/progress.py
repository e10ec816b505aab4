"""Progress of the isolated parser, reported to its parent through a small file.

The parent (``isolation.run_isolated``) reads it to show per-page progress and to apply its timeout to the time
since the last progress rather than to the whole parse: a 600-page manual is parsed to the end as long as pages keep
coming, while a parser that hangs is still killed ``timeout_s`` after its last sign of life.
"""

from __future__ import annotations

import os
from pathlib import Path

PROGRESS_ENV = "KBQA_PARSE_PROGRESS"
#: Longest document (pages, slides, image frames) that is parsed; a longer one fails with this reason, never partly.
MAX_PAGES_ENV = "KBQA_PARSE_MAX_PAGES"
DEFAULT_MAX_PAGES = 5000


def max_pages() -> int:
    try:
        return max(1, int(os.environ.get(MAX_PAGES_ENV, DEFAULT_MAX_PAGES)))
    except ValueError:
        return DEFAULT_MAX_PAGES


def check_pages(total: int, unit: str = "pages") -> None:
    from ingestion.parsing.model import parse_failed

    limit = max_pages()
    if total > limit:
        raise parse_failed(
            f"document has {total} {unit}, over the limit of {limit} (KBQA_INGESTION__PARSE_MAX_PAGES); "
            "nothing was indexed rather than a part of it"
        )


def report(done: int, total: int) -> None:
    """Record that ``done`` of ``total`` units are parsed (a tiny file replaced atomically, so the parent never reads
    half of it)."""
    path = os.environ.get(PROGRESS_ENV)
    if not path:
        return
    tmp = f"{path}.tmp"
    try:
        Path(tmp).write_text(f"{done} {total}\n")
        os.replace(tmp, path)
    except OSError:
        pass  # progress is advisory


def read(path: Path) -> tuple[int, int] | None:
    try:
        done, total = Path(path).read_text().split()
        return int(done), int(total)
    except (OSError, ValueError):
        return None
