"""Upload edges from the security probe: a multi-file upload is all or nothing (a refused file leaves no earlier file
of the same request stored: no row, no job, no audit event, no stored bytes), and the archive-bomb check finds a ZIP
by its end-of-central-directory record, so bytes prepended to a bomb do not smuggle it past. Over HTTP on real,
migrated SQLite and PostgreSQL databases with the shared fakes (``Env`` of ``test_security_findings``)."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from sqlalchemy import select

from core.db import repositories as repo
from core.db.models import IngestionJob
from core.errors import AppError, ErrorCode
from ingestion.hygiene import check_archive, is_zip
from tests.unit.test_security_findings import Env, make_env  # noqa: F401 - the fixture the env fixture builds on

pytestmark = pytest.mark.unit

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def zip_bomb(expanded_mb: int = 64) -> bytes:
    """A DOCX-shaped ZIP whose one big member is ``expanded_mb`` MB of zeros (about 1000:1 compressed)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        with zf.open("word/document.xml", "w") as member:
            block = b"\0" * (1024 * 1024)
            for _ in range(expanded_mb):
                member.write(block)
    return buf.getvalue()


def small_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", "<w:document>hello</w:document>")
    return buf.getvalue()


PREFIX = b"MZ\x90\x00 not a zip header " + bytes(range(256)) * 4  # an exe stub or any junk


@pytest.fixture(scope="module")
def bomb() -> bytes:
    return zip_bomb()


def test_a_bomb_with_bytes_prepended_is_still_a_bomb(bomb):
    prepended = PREFIX + bomb
    assert not prepended.startswith(b"PK")
    # what every parser sees: zipfile opens it, and it expands to 64 MB
    with zipfile.ZipFile(io.BytesIO(prepended)) as zf:
        assert sum(i.file_size for i in zf.infolist()) == 64 * 1024 * 1024 + len("<Types/>")
    assert is_zip(prepended)
    for data in (bomb, prepended):
        with pytest.raises(AppError) as caught:
            check_archive(data)
        assert caught.value.code is ErrorCode.VALIDATION and "bomb" in caught.value.message
    # a harmless archive with bytes prepended, and files that are no archive at all, pass
    check_archive(PREFIX + small_zip())
    for data in (b"", PREFIX, b"# notes\n\nplain text"):
        assert not is_zip(data)
        check_archive(data)
    check_archive(b"plain text PK\x05\x06 with a stray signature")  # looks like a directory record, holds nothing


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request, make_env) -> Env:  # noqa: F811
    if request.param == "postgresql":
        return make_env(ingestion={"max_upload_bytes": 2_000_000}, database={"url": request.getfixturevalue("pg_url")})
    return make_env(ingestion={"max_upload_bytes": 2_000_000})


def stored_files(env: Env) -> list[Path]:
    root = Path(env.container.ingest.files.root)
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


def snapshot(env: Env) -> tuple:
    """Everything an upload writes: documents (with versions), jobs, upload audit events, stored files, dispatches."""
    with env.container.db.session() as s:
        docs = sorted((d.id, d.version, d.content_hash) for d in repo.list_documents(session=s, tenant_id="acme"))
        jobs = sorted(j.id for j in s.scalars(select(IngestionJob)))
        uploads = [e.id for e in repo.list_audit(session=s, tenant_id="acme", action="document.upload", limit=1000)]
    return docs, jobs, uploads, stored_files(env), list(env.container.ingest.dispatcher.sent)


def upload(env: Env, files: list[tuple[str, bytes, str]], key: str = "editor"):  # noqa: ANN201
    return env.client.post(
        "/api/v1/documents", files=[("files", f) for f in files], headers=env.h(key)
    )


def test_a_prepended_bomb_after_a_good_file_stores_nothing(env, bomb):
    before = snapshot(env)
    r = upload(env, [("good.md", b"# Good\n\nfine", "text/markdown"), ("bomb.docx", PREFIX + bomb, DOCX)])
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "validation_error" and error["details"]["filename"] == "bomb.docx"
    assert snapshot(env) == before
    # the good file alone is accepted
    r = upload(env, [("good.md", b"# Good\n\nfine", "text/markdown")])
    assert r.status_code == 202 and len(stored_files(env)) == 1


def test_a_later_file_over_the_size_limit_stores_nothing(env):
    before = snapshot(env)
    r = upload(
        env,
        [("a.md", b"# A\n\nfirst", "text/markdown"), ("b.md", b"# B\n\nsecond", "text/markdown"),
         ("huge.md", b"x" * 2_000_001, "text/markdown")],
    )
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    assert r.json()["error"]["details"]["filename"] == "huge.md"
    assert snapshot(env) == before


def test_a_file_refused_while_storing_rolls_back_the_earlier_ones(env):
    """The third file repeats the content of a document outside the editor's groups (409), found only once the
    request is being stored: the new document and the new version written before it are undone, bytes included."""
    hr_bytes = b"# payroll\n\nsalaries"
    env.add_document("payroll.md", ["hr"], data=hr_bytes)
    old = env.add_document("policy.md", data=b"# policy v1")
    before = snapshot(env)
    r = upload(
        env,
        [("new.md", b"# new\n\ncontent", "text/markdown"), ("policy.md", b"# policy v2", "text/markdown"),
         ("copy.md", hr_bytes, "text/markdown")],
    )
    assert r.status_code == 409 and r.json()["error"]["code"] == "conflict", r.text
    assert "payroll" not in r.text
    assert snapshot(env) == before
    doc = env.client.get(f"/api/v1/documents/{old}", headers=env.h("editor")).json()
    assert doc["version"] == 1
    assert env.client.get("/api/v1/documents", params={"q": "new"}, headers=env.h("admin")).json()["total"] == 0


def test_a_request_holding_the_same_content_twice_makes_one_document(env):
    r = upload(env, [("a.md", b"# same\n\nbytes", "text/markdown"), ("b.md", b"# same\n\nbytes", "text/markdown")])
    assert r.status_code == 202, r.text
    first, second = r.json()["documents"]
    assert first["id"] == second["id"] and (first["duplicate"], second["duplicate"]) == (False, True)
    assert len(stored_files(env)) == 1 and len(env.container.ingest.dispatcher.sent) == 1
