"""The line above a table of figures that says what they count: "(In millions, except per share amounts)".

A row quoted without it ("Net income — 2024: 958") reads as 958 dollars. The chunker keeps such a line with the table
(every part of a long one), and the extractive composer quotes it with the row it answers from.
"""

from __future__ import annotations

import re

_UNITS = re.compile(
    r"^\(?\s*(?:(?:all\s+)?(?:amounts|figures|dollars|values)\s+)?(?:are\s+)?(?:expressed\s+|stated\s+|shown\s+)?in\s+"
    r"(?:(?:usd|eur|gbp|cad|aud|jpy|chf|u\.?s\.?)\s*(?:dollars|\$)?\s*)?(?:thousands|millions|billions|percent|dollars|"
    r"euros)\b[^()]{0,120}\)?\.?$",
    re.IGNORECASE,
)


def units_note(line: str) -> str:
    """The units a table's figures are in, from the line introducing the table ("In millions, except per share
    amounts"), or "" when the line is something else. An unbracketed line counts only when short (8 words)."""
    text = line.strip()
    if not _UNITS.match(text) or (not text.startswith("(") and len(text.split()) > 8):
        return ""
    return text.strip("()").strip().rstrip(".")
