"""Document parsing: bytes of any supported format -> ``ParsedDocument`` (ordered structural elements).

``parse_file`` is the entry point for the pipeline: the parser runs in an isolated child process with a timeout and
a memory limit, and every failure becomes ``AppError(ErrorCode.PARSE_FAILED, <reason a person understands>)``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ingestion.parsing.detect import decode_text, detect_type
from ingestion.parsing.isolation import DEFAULT_TARGET, ParseOptions, run_isolated
from ingestion.parsing.model import ParsedDocument, markdown_table

__all__ = ["ParseOptions", "ParsedDocument", "decode_text", "detect_type", "markdown_table", "parse_file"]


def parse_file(
    path: Path,
    *,
    filename: str | None = None,
    timeout_s: float = 120,
    memory_mb: int = 2048,
    options: ParseOptions | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> ParsedDocument:
    """Parse ``path`` in a child process. ``filename`` (the uploaded name) only breaks ties in type detection;
    ``timeout_s`` counts from the parser's last progress (page); ``on_progress(done, total)`` sees each page."""
    parsed: ParsedDocument = run_isolated(
        DEFAULT_TARGET,
        Path(path),
        filename=filename,
        timeout_s=timeout_s,
        memory_mb=memory_mb,
        options=options,
        on_progress=on_progress,
    )
    return parsed
