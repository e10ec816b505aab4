"""Parse a Server-Sent Events body into (event type, JSON data) pairs; comment lines (heartbeats) are skipped."""

from __future__ import annotations

import json


def parse_sse(text: str) -> list[tuple[str, dict]]:
    events = []
    for block in text.split("\n\n"):
        lines = [ln for ln in block.splitlines() if ln and not ln.startswith(":")]
        if lines:
            etype = next(ln[7:] for ln in lines if ln.startswith("event: "))
            events.append((etype, json.loads("\n".join(ln[6:] for ln in lines if ln.startswith("data: ")))))
    return events
