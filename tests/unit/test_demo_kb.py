"""The demo knowledge base (demo/kb) and its evaluation sets (demo/questions.jsonl, demo/support_questions.jsonl)."""

from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
KB = REPO / "demo" / "kb"
QUESTIONS = REPO / "demo" / "questions.jsonl"
SUPPORT_QUESTIONS = REPO / "demo" / "support_questions.jsonl"
SCRIPT = REPO / "scripts" / "build_demo_docs.py"
FORMATS = {".md", ".html", ".docx", ".pdf"}


def _load_builder() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_demo_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("build_demo_docs", module)
    spec.loader.exec_module(module)
    return module


builder = _load_builder()


def _kb_files() -> list[Path]:
    return sorted(p for p in KB.iterdir() if p.is_file() and p.suffix in FORMATS)


def _questions() -> list[dict]:
    return [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]


_TEXT_CACHE: dict[str, str] = {}


def _text(name: str) -> str:
    if name not in _TEXT_CACHE:
        _TEXT_CACHE[name] = builder.normalize(builder.extract_text(KB / name))
    return _TEXT_CACHE[name]


def test_kb_has_at_least_15_files_in_all_four_formats() -> None:
    files = _kb_files()
    counts = Counter(p.suffix for p in files)
    assert len(files) >= 15, [p.name for p in files]
    assert set(counts) == FORMATS, counts
    assert counts[".docx"] >= 4 and counts[".pdf"] >= 4, counts


def test_documents_are_support_article_sized() -> None:
    for path in _kb_files():
        words = len(builder.extract_text(path).split())
        assert 250 <= words <= 1300, (path.name, words)


def test_every_generated_file_has_a_source_and_no_shipped_twin() -> None:
    for stem, fmt in builder.TARGETS.items():
        assert (KB / "src" / f"{stem}.md").is_file(), stem
        assert (KB / f"{stem}.{fmt}").is_file(), f"{stem}.{fmt} not built"
        assert not (KB / f"{stem}.md").exists() and not (KB / f"{stem}.html").exists(), stem
    shipped_binaries = {p.stem for p in KB.iterdir() if p.suffix in (".docx", ".pdf")}
    assert shipped_binaries == set(builder.TARGETS)


def test_kb_contains_real_tables() -> None:
    tables = 0
    for path in _kb_files():
        if path.suffix == ".md":
            tables += sum(isinstance(b, builder.Table) for b in builder.parse_markdown(path.read_text("utf-8")))
        elif path.suffix == ".html":
            tables += path.read_text("utf-8").count("<table>")
        elif path.suffix == ".docx":
            from docx import Document

            tables += len(Document(str(path)).tables)
    assert tables >= 3


def test_docx_files_use_word_heading_list_and_table_structures() -> None:
    from docx import Document

    for name in (f"{s}.docx" for s, fmt in builder.TARGETS.items() if fmt == "docx"):
        doc = Document(str(KB / name))
        styles = Counter(p.style.name for p in doc.paragraphs)
        assert styles["Heading 1"] == 1 and styles["Heading 2"] >= 3, (name, styles)
        assert styles["List Bullet"] + styles["List Number"] >= 3, (name, styles)
        assert doc.tables and len(doc.tables[0].rows) >= 3, name
        assert doc.core_properties.created == builder.FIXED_DATE


def test_pdf_files_have_text_layer_outline_and_multiple_pages() -> None:
    from pypdf import PdfReader

    page_counts = {}
    for name in (f"{s}.pdf" for s, fmt in builder.TARGETS.items() if fmt == "pdf"):
        reader = PdfReader(str(KB / name))
        page_counts[name] = len(reader.pages)
        assert len(_text(name)) > 1500, name
        assert reader.outline, f"{name} has no bookmarks"
    assert max(page_counts.values()) >= 3, page_counts


def test_parse_markdown_reads_headings_lists_and_tables() -> None:
    blocks = builder.parse_markdown(
        "# Title\n\nIntro *text*.\n\n## Part\n\n1. one\n2. two\n\n- a\n\n| K | V |\n|---|---|\n| x | 1 |\n"
    )
    assert blocks == [
        builder.Heading(1, "Title"),
        builder.Para("Intro text."),
        builder.Heading(2, "Part"),
        builder.ListBlock(True, ("one", "two")),
        builder.ListBlock(False, ("a",)),
        builder.Table(("K", "V"), (("x", "1"),)),
    ]


def test_questions_file_shape() -> None:
    questions = _questions()
    assert len(questions) >= 30
    assert all(set(q) == {"question", "answer", "file"} for q in questions)
    unanswerable = [q for q in questions if q["answer"] is None]
    assert len(unanswerable) >= 5 and all(q["file"] is None for q in unanswerable)
    names = {p.name for p in _kb_files()}
    assert all(q["file"] in names for q in questions if q["answer"] is not None)
    assert len({q["question"] for q in questions}) == len(questions), "duplicate question"


@pytest.mark.parametrize("item", [q for q in _questions() if q["answer"] is not None], ids=lambda q: q["question"][:40])
def test_answer_occurs_in_its_file_and_no_other(item: dict) -> None:
    answer = builder.normalize(item["answer"])
    holders = [p.name for p in _kb_files() if answer in _text(p.name)]
    assert holders == [item["file"]], f"{answer!r} found in {holders}, expected only {item['file']}"


def test_build_is_deterministic(tmp_path: Path) -> None:
    first = builder.build(tmp_path / "a")
    second = builder.build(tmp_path / "b")
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_check_mode_passes() -> None:
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "check ok" in result.stdout


def test_check_mode_reports_missing_stale_and_duplicated_outputs(tmp_path: Path, monkeypatch) -> None:
    kb = tmp_path / "kb"
    shutil.copytree(KB, kb)
    monkeypatch.setattr(builder, "KB_DIR", kb)
    monkeypatch.setattr(builder, "SRC_DIR", kb / "src")
    (kb / "kestrel-hub-user-manual.docx").unlink()
    (kb / "troubleshooting-guide.md").write_text("# Kestrel Troubleshooting Guide\n", encoding="utf-8")
    source = kb / "src" / "privacy-and-data-retention-policy.md"
    source.write_text(source.read_text("utf-8") + "\n## Added section\n\nNew text.\n", encoding="utf-8")
    errors = builder.check()
    assert any("kestrel-hub-user-manual.docx: missing" in e for e in errors), errors
    assert any("troubleshooting-guide.md: duplicates" in e for e in errors), errors
    assert any("privacy-and-data-retention-policy.pdf: stale" in e for e in errors), errors


# ---------------------------------------------------------------- the support-style evaluation set

SUPPORT_KEYS = {"id", "question", "answerable", "expected", "must_contain", "previous", "kind"}
SUPPORT_KINDS = {"howto", "fact", "why", "unanswerable", "followup"}


def _support_questions() -> list[dict]:
    lines = SUPPORT_QUESTIONS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _answerable_support_questions() -> list[dict]:
    return [q for q in _support_questions() if q["answerable"]]


_HEADINGS_CACHE: dict[str, set[str]] = {}


def _headings(name: str) -> set[str]:
    """Heading texts of a KB file as written in its source: Markdown (the file or its src/ twin) or HTML <h1>-<h6>."""
    if name not in _HEADINGS_CACHE:
        path = KB / name
        if path.suffix == ".html":
            raw = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", path.read_text("utf-8"), flags=re.S)
            found = {builder.normalize(html.unescape(re.sub(r"<[^>]+>", "", h))) for h in raw}
        else:
            source = path if path.suffix == ".md" else KB / "src" / f"{path.stem}.md"
            blocks = builder.parse_markdown(source.read_text("utf-8"))
            found = {builder.normalize(h.text) for h in builder.headings_of(blocks)}
        _HEADINGS_CACHE[name] = found
    return _HEADINGS_CACHE[name]


def test_support_questions_file_shape_and_counts() -> None:
    questions = _support_questions()
    assert all(set(q) == SUPPORT_KEYS for q in questions), [q.get("id") for q in questions if set(q) != SUPPORT_KEYS]
    ids = [q["id"] for q in questions]
    assert len(set(ids)) == len(ids), [i for i, n in Counter(ids).items() if n > 1]
    assert all(re.fullmatch(r"s\d{3}", i) for i in ids), ids
    assert all(q["kind"] in SUPPORT_KINDS for q in questions), Counter(q["kind"] for q in questions)
    turns = Counter((q["previous"], q["question"]) for q in questions)
    assert all(n == 1 for n in turns.values()), [t for t, n in turns.items() if n > 1]
    unanswerable = [q for q in questions if not q["answerable"]]
    followups = [q for q in questions if q["kind"] == "followup"]
    assert len(questions) >= 130, len(questions)
    assert len(unanswerable) >= 30, len(unanswerable)
    assert len(followups) >= 20, len(followups)
    assert all(isinstance(q["answerable"], bool) for q in questions)


def test_support_unanswerable_questions_have_no_expected_answer() -> None:
    for q in _support_questions():
        if q["kind"] == "unanswerable":
            assert q["answerable"] is False, q["id"]
        if not q["answerable"]:
            assert q["expected"] == [] and q["must_contain"] == [], q["id"]
            assert q["kind"] in ("unanswerable", "followup"), q["id"]
        else:
            assert q["kind"] != "unanswerable", q["id"]
            assert 1 <= len(q["expected"]) <= 3, q["id"]
            assert 1 <= len(q["must_contain"]) <= 3, q["id"]
            assert all(2 <= len(fact.split()) <= 8 for fact in q["must_contain"]), (q["id"], q["must_contain"])


def test_support_followups_name_a_first_turn_of_the_set() -> None:
    questions = _support_questions()
    first_turns = {q["question"] for q in questions if q["previous"] is None}
    for q in questions:
        if q["kind"] == "followup":
            assert q["previous"] in first_turns, (q["id"], q["previous"])
        else:
            assert q["previous"] is None, q["id"]


@pytest.mark.parametrize("item", _answerable_support_questions(), ids=lambda q: q["id"])
def test_support_expected_sections_exist(item: dict) -> None:
    names = {p.name for p in _kb_files()}
    for expected in item["expected"]:
        assert set(expected) == {"file", "section"}, expected
        assert expected["file"] in names, expected["file"]
        section = builder.normalize(expected["section"])
        assert section in _headings(expected["file"]), f"{section!r} is not a heading of {expected['file']}"
        assert section.lower() in _text(expected["file"]).lower(), f"{section!r} not in the text of {expected['file']}"


@pytest.mark.parametrize("item", _answerable_support_questions(), ids=lambda q: q["id"])
def test_support_must_contain_facts_occur_in_an_expected_file(item: dict) -> None:
    texts = [_text(e["file"]).lower() for e in item["expected"]]
    for fact in item["must_contain"]:
        needle = builder.normalize(fact).lower()
        assert any(needle in text for text in texts), f"{fact!r} not in {[e['file'] for e in item['expected']]}"
