"""Answers on the demo knowledge base: ``python benchmarks/demo_answers.py [--data-dir DIR] [--show]``.

Ingests the top-level files of ``demo/kb`` (md, html, docx, pdf) into a fresh (or reused) data dir with the default
settings (embedded extractive answerer), asks every question of ``demo/questions.jsonl`` and reports how often an
answerable question's answer contains the expected string and how often an unanswerable one is refused.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import tempfile
from pathlib import Path
from typing import Any

from app.cli import migrate_database
from app.generation.events import Done
from app.main import build_container
from core.settings import Settings
from core.types import SearchFilter

ROOT = Path(__file__).resolve().parents[1]
SUFFIXES = {".md", ".html", ".docx", ".pdf"}
MARKER = re.compile(r"\s*\[\d+(?:\s*,\s*\d+)*\]")


def contains(answer: str, expected: str) -> bool:
    """Expected string in the answer, ignoring case and citation markers ("again [2]." contains "again.")."""
    return expected.lower() in MARKER.sub("", answer).lower()


async def ask(container: Any, question: str) -> Done:
    done = None
    async for e in container.answers.run(question, flt=SearchFilter(tenant_id="default"), history=[],
                                         request_id="x", conversation_id=None, message_id=None, top_k=6):
        if isinstance(e, Done):
            done = e
    assert done is not None
    return done


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data-dir", type=Path, default=None, help="reuse an ingested data dir (created if empty)")
    ap.add_argument("--show", action="store_true", help="print every answer")
    args = ap.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="kbqa-demo-"))
    settings = Settings(_env_file=None, data_dir=data_dir)
    migrate_database(settings)
    container = build_container(settings)
    for path in sorted((ROOT / "demo" / "kb").iterdir()):
        if path.is_file() and path.suffix in SUFFIXES:
            container.ingest.submit(tenant_id="default", filename=path.name, data=path.read_bytes())
    container.dispatcher.wait()
    questions = [json.loads(line) for line in (ROOT / "demo" / "questions.jsonl").read_text().splitlines() if line]
    hits = refused_ok = n_pos = n_neg = 0
    for q in questions:
        done = asyncio.run(ask(container, q["question"]))
        expected = q.get("answer")
        if expected:
            n_pos += 1
            ok = contains(done.answer, expected)
            hits += ok
        else:
            n_neg += 1
            ok = done.refused
            refused_ok += ok
        if args.show or not ok:
            print(f"{'OK ' if ok else 'BAD'} {q['question']!r} expected={expected!r}\n    {done.answer!r}")
    print(json.dumps({"answerable": n_pos, "answer_contains_expected": hits, "unanswerable": n_neg,
                      "refused": refused_ok}))


if __name__ == "__main__":
    main()
