"""Citations open their original: GET /documents/{id}/original serves the stored file safely (type allowlist, inline,
nosniff, no caching, HTML never as HTML) and GET /chunks/{id}/section the section around a passage -- both with the
tenant and ACL-group checks of the documents API. Real migrated SQLite database, real upload service and file store
(a Fake dispatcher stands in for the broker: nothing is parsed here)."""

from __future__ import annotations

import io

import pytest
from fastapi.testclient import TestClient
from pypdf import PdfReader
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from app.main import create_app
from app.services import originals
from core.db import repositories as repo
from core.db.models import Document
from core.types import ChunkRecord, Role
from ingestion.service import IngestService
from tests.fakes import FakeDispatcher, FakeIndexRemover
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

PAGE_TWO = "The hub keeps a local copy of every schedule for offline use."
HTML = b"<html><body><h1>Setup</h1><script>alert(document.cookie)</script><p>Hold the button.</p></body></html>"


def make_pdf() -> bytes:
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    pdf.drawString(72, 760, "Kestrel Hub manual, page one: unpacking.")
    pdf.showPage()
    pdf.drawString(72, 760, PAGE_TWO)
    pdf.showPage()
    pdf.save()
    return buf.getvalue()


@pytest.fixture
def api(make_settings):
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0})
    container = fake_container(settings)
    container.ingest = IngestService(
        settings=settings, db=container.db, dispatcher=FakeDispatcher(), indexes=FakeIndexRemover()
    )
    keys = {}
    with container.db.session() as s:
        _, keys["admin"] = repo.create_api_key(session=s, tenant_id="acme", name="admin", role=Role.ADMIN)
        _, keys["sales"] = repo.create_api_key(
            session=s, tenant_id="acme", name="sales", role=Role.AGENT, acl_groups=["sales"]
        )
        _, keys["globex"] = repo.create_api_key(session=s, tenant_id="globex", name="globex", role=Role.ADMIN)
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield client, {k: {"Authorization": f"Bearer {v}"} for k, v in keys.items()}, container
    container.db.dispose()


def upload(client, headers, name: str, data: bytes, acl: str | None = None) -> str:  # noqa: ANN001
    form = {"acl_groups": acl} if acl else {}
    r = client.post("/api/v1/documents", files={"files": (name, data)}, data=form, headers=headers)
    assert r.status_code == 202, r.text
    return r.json()["documents"][0]["id"]


def add_chunks(container, doc_id: str, pieces: list[tuple[str, tuple[str, ...], int | None]]) -> list[str]:  # noqa: ANN001
    with container.db.session() as s:
        doc = s.get(Document, doc_id)
        records = [
            ChunkRecord(
                id=ChunkRecord.make_id(doc.tenant_id, doc.id, doc.version, i, text), tenant_id=doc.tenant_id,
                document_id=doc.id, document_version=doc.version, title=doc.title, text=text, section_path=path,
                page_start=page, page_end=page, order=i,
            )
            for i, (text, path, page) in enumerate(pieces)
        ]
        repo.replace_chunks(session=s, document=doc, chunks=records, embedder_version="fake")
        doc.doc_type = "pdf" if doc.filename.endswith(".pdf") else doc.doc_type
        return [r.id for r in records]


def assert_hidden(r) -> None:  # noqa: ANN001
    assert r.status_code == 404
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["error"]["code"] == "not_found"


def test_pdf_original_round_trips_inline_with_safe_headers(api):
    client, h, _ = api
    data = make_pdf()
    doc_id = upload(client, h["admin"], "Hub manual (v2).pdf", data)
    r = client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"])
    assert r.status_code == 200
    assert r.content == data
    assert r.headers["content-type"] == "application/pdf"
    assert r.headers["content-disposition"].startswith('inline; filename="Hub manual (v2).pdf"')
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "private, no-store"
    assert r.headers["x-document-version"] == "1"
    assert PAGE_TWO in PdfReader(io.BytesIO(r.content)).pages[1].extract_text()


def test_html_original_is_plain_text_in_a_sandbox_never_html(api):
    client, h, _ = api
    doc_id = upload(client, h["admin"], "setup.html", HTML)
    r = client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"])
    assert r.status_code == 200 and r.content == HTML
    assert r.headers["content-type"] == "text/plain; charset=utf-8"
    assert "sandbox" in r.headers["content-security-policy"]
    assert r.headers["content-disposition"].startswith("inline;")
    assert r.headers["x-content-type-options"] == "nosniff"


def test_markdown_original_is_plain_text(api):
    client, h, _ = api
    doc_id = upload(client, h["admin"], "faq.md", b"# FAQ\n\nHello.")
    r = client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"])
    assert r.headers["content-type"] == "text/plain; charset=utf-8" and r.text == "# FAQ\n\nHello."


def test_other_tenants_and_other_groups_get_the_not_found_of_a_missing_document(api):
    client, h, container = api
    doc_id = upload(client, h["admin"], "hr-only.pdf", make_pdf(), acl="hr")
    open_id = upload(client, h["admin"], "open.md", b"# Open\n\nfor everyone")
    (chunk,) = add_chunks(container, doc_id, [("Salaries are paid monthly.", ("Pay",), 1)])
    missing = client.get("/api/v1/documents/nosuchdocument/original", headers=h["admin"])
    assert_hidden(missing)
    for who in ("globex", "sales"):
        r = client.get(f"/api/v1/documents/{doc_id}/original", headers=h[who])
        assert_hidden(r)
        assert r.json()["error"]["message"] == missing.json()["error"]["message"].replace("nosuchdocument", doc_id)
        assert_hidden(client.get(f"/api/v1/chunks/{chunk}/section", headers=h[who]))
    assert client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"]).status_code == 200
    # a document without groups is open to the sales agent, but never to another tenant
    assert client.get(f"/api/v1/documents/{open_id}/original", headers=h["sales"]).status_code == 200
    assert_hidden(client.get(f"/api/v1/documents/{open_id}/original", headers=h["globex"]))
    assert client.get(f"/api/v1/documents/{doc_id}/original").status_code == 401


def test_a_file_gone_from_the_store_is_a_json_404(api):
    client, h, container = api
    doc_id = upload(client, h["admin"], "gone.md", b"# Gone\n\nsoon")
    with container.db.session() as s:
        key = s.get(Document, doc_id).storage_path
    container.ingest.files.delete(key)
    assert_hidden(client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"]))


def test_a_storage_path_outside_the_upload_folder_is_never_served(api, tmp_path):
    client, h, container = api
    doc_id = upload(client, h["admin"], "moved.md", b"# Moved\n\nx")
    secret = tmp_path / "elsewhere.txt"
    secret.write_text("not an upload")
    with container.db.session() as s:
        s.get(Document, doc_id).storage_path = str(secret)
    assert_hidden(client.get(f"/api/v1/documents/{doc_id}/original", headers=h["admin"]))


def test_section_joins_neighbours_without_the_chunker_overlap_and_marks_the_passage(api):
    client, h, container = api
    doc_id = upload(client, h["admin"], "guide.md", b"# Guide\n\nbody")
    overlap = "Hold the button for ten seconds."
    first = f"Unplug the hub. {overlap}"
    cited = f"{overlap} The light turns amber and the hub restarts."
    ids = add_chunks(container, doc_id, [
        ("Intro text in another section.", ("Intro",), None),
        (first, ("Guide", "Reset"), None),
        (cited, ("Guide", "Reset"), None),
        ("Then pair it again in the app.", ("Guide", "Reset"), None),
        ("Warranty is two years.", ("Warranty",), None),
    ])
    r = client.get(f"/api/v1/chunks/{ids[2]}/section", headers=h["admin"])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["text"] == f"Unplug the hub. {cited}\n\nThen pair it again in the app."
    assert body["text"][body["highlight_start"]:body["highlight_end"]] == cited
    assert body["section_path"] == ["Guide", "Reset"] and body["document_id"] == doc_id
    assert body["truncated"] is False
    assert "Intro" not in body["text"] and "Warranty" not in body["text"]
    assert_hidden(client.get("/api/v1/chunks/nosuchchunk/section", headers=h["admin"]))


def test_a_long_section_is_cut_around_the_passage_and_says_so(api):
    client, h, container = api
    doc_id = upload(client, h["admin"], "long.md", b"# Long\n\nbody")
    count = 2 * originals.SECTION_NEIGHBOURS + 9
    ids = add_chunks(container, doc_id, [(f"Paragraph number {i} of the long section.", ("Long",), None)
                                         for i in range(count)])
    body = client.get(f"/api/v1/chunks/{ids[0]}/section", headers=h["admin"]).json()
    assert body["truncated"] is True and body["highlight_start"] == 0
    assert f"number {originals.SECTION_NEIGHBOURS} of" in body["text"]
    assert f"number {originals.SECTION_NEIGHBOURS + 1} of" not in body["text"]
    middle = client.get(f"/api/v1/chunks/{ids[count // 2]}/section", headers=h["admin"]).json()
    cited = middle["text"][middle["highlight_start"]:middle["highlight_end"]]
    assert cited == f"Paragraph number {count // 2} of the long section."
    assert middle["truncated"] is True
    last = client.get(f"/api/v1/chunks/{ids[-1]}/section", headers=h["admin"]).json()
    assert last["text"].endswith(f"number {count - 1} of the long section.") and last["truncated"] is True


def test_join_passages_keeps_the_cited_passage_whole_and_stays_within_the_limit():
    texts = ["a" * 50, "b" * 50, "the cited passage", "c" * 50, "d" * 50]
    text, start, end, truncated = originals.join_passages(texts, 2, max_chars=130)
    assert text[start:end] == "the cited passage"
    assert truncated and "d" * 50 not in text and "a" * 50 not in text
    assert originals.join_passages(["only"], 0) == ("only", 0, 4, False)


def test_join_passages_drops_the_heading_path_and_the_subsection_heading_the_chunker_repeats():
    """Chunks as the chunker writes them: each opens with the section's heading path, and a subsection that goes on in
    the next chunk is named there again before the overlap. The section reads once, the cited passage marked."""
    crumb = "Guide > Restarting and resetting"
    first = (f"{crumb}\n\nA restart keeps all settings.\n\nFactory reset of the Hub\n\n1. Keep the Hub plugged in.\n"
             "2. The Hub restarts in about 2 minutes.")
    second = (f"{crumb}\n\nFactory reset of the Hub\n\n2. The Hub restarts in about 2 minutes.\n\n"
              "All accessories must be paired again.")
    text, start, end, truncated = originals.join_passages([first, second], 1)
    assert text == f"{first}\n\nAll accessories must be paired again."
    assert text.count(crumb) == 1 and text.count("Factory reset of the Hub") == 1 and not truncated
    assert text[start:end] == "2. The Hub restarts in about 2 minutes.\n\nAll accessories must be paired again."
    whole, s0, e0, _ = originals.join_passages([first, second], 0)
    assert whole == text and whole[s0:e0] == first


@pytest.mark.parametrize(
    ("filename", "mime", "doc_type", "head", "expected"),
    [
        ("a.pdf", "application/pdf", "pdf", b"%PDF-1.7", "application/pdf"),
        ("a.pdf", "application/pdf", "pdf", b"<html>", "application/octet-stream"),  # a PDF in name only
        ("a.html", "text/html", "html", b"<html>", "text/plain; charset=utf-8"),
        ("a.svg", "", "", b"<svg", "text/plain; charset=utf-8"),
        ("a.xhtml", "", "", b"<html", "text/plain; charset=utf-8"),
        ("a.png", "image/png", "image", b"\x89PNG", "image/png"),
        ("a.docx", "", "docx", b"PK\x03\x04",
         "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
        ("a.exe", "", "", b"MZ", "application/octet-stream"),
    ],
)
def test_media_types_come_from_an_allowlist(filename, mime, doc_type, head, expected):
    assert originals.media_type_for(filename=filename, mime_type=mime, doc_type=doc_type, head=head) == expected


def test_content_disposition_names_are_safe():
    value = originals.inline_disposition('../../etc/pa"ss\r\nwd Ünïcode.pdf')
    ascii_part = value.split("filename*=")[0]
    assert value.startswith('inline; filename="')
    assert "\r" not in value and "\n" not in value and ".." not in ascii_part and ascii_part.count('"') == 2
    assert "filename*=UTF-8''" in value and "%C3%9C" in value
