"""End to end on real parts (real parsers with Tesseract and LibreOffice, chunker, MiniLM, tantivy and vector indexes,
SQLite): a scanned PDF, a PNG, a .doc and a long PDF are ingested through the upload service and found by search with
their text and page; the long PDF's parse takes many times the parse timeout and is still indexed to its last page,
its parsing stage shows page progress and the OCR'd pages' confidence."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import migrate_database
from core.db import repositories as repo
from core.db.models import Chunk
from core.types import Role
from tests.integration.test_parse_ocr_office import LINES, _long_pdf, _text_image

pytestmark = [
    pytest.mark.integration,
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("tesseract") is None or shutil.which("soffice") is None,
        reason="Tesseract or LibreOffice is not installed (scripts/install-parsers.sh)",
    ),
]
PAGES = 80


def _doc_file(tmp: Path) -> Path:
    import docx

    word = docx.Document()
    word.add_heading("Loan equipment", 1)
    word.add_paragraph("Loaner laptops are returned to the Oslo service desk within fourteen days.")
    word.save(str(tmp / "loaners.docx"))
    profile = (tmp / "profile").as_uri()
    subprocess.run(
        ["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", "doc", "--outdir", str(tmp),
         str(tmp / "loaners.docx")],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return tmp / "loaners.doc"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    from app.main import build_container, create_app
    from core.settings import Settings

    tmp = tmp_path_factory.mktemp("files")
    png = tmp / "warranty-notice.png"
    _text_image(LINES).save(png)
    scan = tmp / "scanned-letter.pdf"
    _text_image(["Refunds are paid within ten working days"]).save(scan, resolution=200)
    manual = tmp / "service-manual.pdf"
    _long_pdf(manual, PAGES)
    files = [png, scan, manual, _doc_file(tmp)]
    settings = Settings(
        _env_file=None,
        data_dir=tmp_path_factory.mktemp("kbqa") / "data",
        api={"requests_per_minute": 0, "tokens_per_minute": 0},
        ingestion={"parse_timeout_s": 5},  # far less than the manual's whole parse: it counts from the last page
    )
    migrate_database(settings)
    container = build_container(settings)
    ids = {}
    for path in files:
        ids[path.name] = container.ingest.submit(tenant_id="t", filename=path.name, data=path.read_bytes()).document.id
    container.dispatcher.wait(timeout=600)
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="t", name="t", role=Role.ADMIN)
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield container, client, {"Authorization": f"Bearer {key}"}, ids
    container.close()


def _top(client: TestClient, headers: dict[str, str], q: str) -> dict:
    r = client.get("/api/v1/search", params={"q": q, "top_k": 3}, headers=headers)
    assert r.status_code == 200, r.text
    return r.json()["results"][0]


def test_every_file_is_indexed_and_found_with_its_text(ingested):
    container, client, headers, ids = ingested
    docs = {d["filename"]: d for d in client.get("/api/v1/documents", headers=headers).json()["documents"]}
    assert {n: (d["status"], d["failure_reason"]) for n, d in docs.items()} == {
        n: ("indexed", None) for n in ids
    }
    assert docs["loaners.doc"]["doc_type"] == "doc" and docs["warranty-notice.png"]["doc_type"] == "image"
    hit = _top(client, headers, "warranty lasts 24 months")
    assert hit["document_id"] == ids["warranty-notice.png"] and "24 months" in hit["text"]
    hit = _top(client, headers, "refunds paid within ten working days")
    assert hit["document_id"] == ids["scanned-letter.pdf"] and hit["page_start"] == 1
    hit = _top(client, headers, "loaner laptops Oslo service desk")
    assert hit["document_id"] == ids["loaners.doc"] and "fourteen days" in hit["text"]


def test_the_long_pdf_is_searchable_on_its_last_page_with_page_progress(ingested):
    container, client, headers, ids = ingested
    doc_id = ids["service-manual.pdf"]
    with container.db.session() as s:
        pages = {c.page_end for c in s.query(Chunk).filter(Chunk.document_id == doc_id)}
    assert max(pages) == PAGES and len(pages) >= PAGES - 1
    hit = _top(client, headers, f"maintenance step {PAGES}.29")
    assert hit["document_id"] == doc_id and hit["page_end"] == PAGES
    detail = client.get(f"/api/v1/documents/{doc_id}", headers=headers).json()
    parsing = next(s for s in detail["stages"] if s["name"] == "parsing")
    assert parsing["status"] == "done"
    assert parsing["detail"] == f"{PAGES} of {PAGES}"
    assert "warnings" not in parsing
    scan = client.get(f"/api/v1/documents/{ids['scanned-letter.pdf']}", headers=headers).json()
    scan_parsing = next(s for s in scan["stages"] if s["name"] == "parsing")
    assert scan_parsing["ocr_pages"] == 1 and scan_parsing["ocr_confidence"]["1"] > 70
