"""GET /api/v1/documents pages through any number of documents (cursor or offset) and counts them, on real
migrated SQLite and PostgreSQL databases (the answer parts are the Fakes of ``test_api_auth_sse``)."""

from __future__ import annotations

import datetime as dt

import pytest
from fastapi.testclient import TestClient

from app.main import create_app
from core.db import repositories as repo
from core.db.models import Document
from core.types import Role
from tests.unit.test_api_auth_sse import fake_container

pytestmark = pytest.mark.unit

COUNT = 1203  # more than two default pages; several documents share each updated_at, so ties are paged correctly


@pytest.fixture(params=["sqlite", "postgresql"])
def docs_api(request, make_settings):
    # PostgreSQL: the session's migrated database, each test rolled back (pg_db)
    db = request.getfixturevalue("pg_db") if request.param == "postgresql" else None
    database = {"url": db.url} if db is not None else {}
    settings = make_settings(api={"requests_per_minute": 0, "tokens_per_minute": 0}, database=database)
    container = fake_container(settings, db=db)
    base = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    with container.db.session() as s:
        _, key = repo.create_api_key(session=s, tenant_id="acme", name="ops", role=Role.ADMIN)
        _, other = repo.create_api_key(session=s, tenant_id="globex", name="globex", role=Role.ADMIN)
        repo.get_or_create_tenant(session=s, tenant_id="acme")
        repo.get_or_create_tenant(session=s, tenant_id="globex")
        s.add_all(
            Document(
                id=f"d{i:05d}",
                tenant_id="acme",
                filename=f"file-{i}.md",
                title=f"File {i}",
                content_hash=f"{i:064d}",
                status="failed" if i % 10 == 0 else "indexed",
                created_at=base,
                updated_at=base + dt.timedelta(seconds=i // 3),
            )
            for i in range(COUNT)
        )
        s.add(Document(id="g1", tenant_id="globex", filename="other.md", content_hash="0" * 64, status="indexed"))
    app = create_app(settings, container=container, sweeper=False)
    with TestClient(app) as client:
        yield client, {"Authorization": f"Bearer {key}"}, {"Authorization": f"Bearer {other}"}
    container.db.dispose()


def _ids(page: dict) -> list[str]:
    return [d["id"] for d in page["documents"]]


def test_cursor_pages_cover_every_document_once_newest_first(docs_api):
    client, headers, _ = docs_api
    seen: list[str] = []
    cursor, pages = None, 0
    while True:
        params = {"limit": 250, **({"cursor": cursor} if cursor else {})}
        page = client.get("/api/v1/documents", params=params, headers=headers).json()
        assert page["total"] == COUNT and page["limit"] == 250
        seen += _ids(page)
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert pages == 5
    assert len(seen) == len(set(seen)) == COUNT
    # newest first: updated_at descending, then id descending within a tie
    assert seen == sorted(seen, reverse=True)


def test_default_page_is_the_old_500_with_a_total_and_offset_works(docs_api):
    client, headers, other = docs_api
    first = client.get("/api/v1/documents", headers=headers).json()
    assert len(first["documents"]) == 500 and first["total"] == COUNT and first["next_cursor"]
    by_offset = client.get("/api/v1/documents", params={"offset": 500, "limit": 10}, headers=headers).json()
    by_cursor = client.get(
        "/api/v1/documents", params={"cursor": first["next_cursor"], "limit": 10}, headers=headers
    ).json()
    assert _ids(by_offset) == _ids(by_cursor)
    last = client.get("/api/v1/documents", params={"offset": COUNT - 3}, headers=headers).json()
    assert len(last["documents"]) == 3 and last["next_cursor"] is None
    # filters apply to the page and to the total; tenants see only their own documents
    failed = client.get("/api/v1/documents", params={"status": "failed", "limit": 1000}, headers=headers).json()
    assert failed["total"] == len(failed["documents"]) == len(range(0, COUNT, 10))
    assert {d["status"] for d in failed["documents"]} == {"failed"}
    assert _ids(client.get("/api/v1/documents", headers=other).json()) == ["g1"]


def test_bad_paging_parameters_are_json_client_errors(docs_api):
    client, headers, _ = docs_api
    for params in ({"cursor": "not-a-cursor"}, {"cursor": "W10"}, {"limit": 0}, {"limit": 5000}, {"offset": -1}):
        r = client.get("/api/v1/documents", params=params, headers=headers)
        assert r.status_code == 422, (params, r.text)
        assert r.json()["error"]["code"] == "validation_error"
