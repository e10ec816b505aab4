"""Every file of the enterprise-docs corpus either parses to >= 1 element or fails with a clear PARSE_FAILED reason.

Run: pytest -m "integration and slow" tests/integration/test_parse_corpus.py -s   (prints outcome/reason counts)
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from core.errors import AppError, ErrorCode
from ingestion.parsing import parse_file

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EVAL_DIR = Path(os.environ.get("KBQA_EVAL_DIR", Path(__file__).resolve().parents[2] / ".." / "shared" / "eval"))
CORPUS = EVAL_DIR / "enterprise_docs"
TIMEOUT_S = float(os.environ.get("KBQA_PARSE_CORPUS_TIMEOUT_S", "60"))
_SKIP_NAMES = {"manifest.csv", "SOURCE.md"}


def _files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.is_file() and p.name not in _SKIP_NAMES)


def _normalise(reason: str) -> str:
    return re.sub(r"\d+", "N", reason)[:90]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"evaluation corpus not found at {CORPUS} (set KBQA_EVAL_DIR)")
def test_every_corpus_file_parses_or_fails_clearly() -> None:
    outcomes: Counter[str] = Counter()
    problems: list[str] = []
    failed: list[str] = []
    for path in _files():
        try:
            doc = parse_file(path, filename=path.name, timeout_s=TIMEOUT_S, memory_mb=2048)
        except AppError as err:
            if err.code != ErrorCode.PARSE_FAILED or not err.message.strip() or "Traceback" in err.message:
                problems.append(f"{path.name}: bad error {err.code} {err.message!r}")
            outcomes[f"failed: {_normalise(err.message)}"] += 1
            failed.append(f"{path.parent.name}/{path.name}: {err.message}")
            continue
        if not doc.elements:
            problems.append(f"{path.name}: parsed to zero elements")
        outcomes[f"parsed: {doc.doc_type}"] += 1
        if doc.warnings:
            failed.append(f"{path.parent.name}/{path.name}: parsed with warnings: {'; '.join(doc.warnings)[:150]}")
    print(f"\n{len(_files())} files")
    for key, n in sorted(outcomes.items()):
        print(f"{n:5d}  {key}")
    print("\nfailures and warnings:")
    for line in failed:
        print(f"  {line}")
    assert not problems, "\n".join(problems)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"evaluation corpus not found at {CORPUS} (set KBQA_EVAL_DIR)")
def test_outlook_msg_parses_within_the_default_memory_limit() -> None:
    """The .msg parser is light (python-oxmsg): it used to abort under the 2 GB limit while loading an NLP stack."""
    doc = parse_file(CORPUS / "unstructured" / "fake-email.msg", filename="fake-email.msg", memory_mb=2048)
    texts = [e.text for e in doc.elements]
    assert doc.title == "Test Email" and "This is a test email to use for unit tests." in texts
    assert any(t.startswith('From: "Matthew Robinson" <mrobinson@unstructured.io>') for t in texts)
    doc = parse_file(CORPUS / "docling" / "email__msg_with_attachment.msg", filename="a.msg", memory_mb=2048)
    assert "Attachments: test.txt, report.pdf" in [e.text for e in doc.elements]
    assert doc.warnings == ["2 attachment(s) not parsed"]
