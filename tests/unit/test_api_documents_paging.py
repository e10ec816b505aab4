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
                title=f"File {i % 400:03d}",  # each title three times: ties are paged by id
                content_hash=f"{i:064d}",
                status="failed" if i % 10 == 0 else "queued" if i % 10 == 1 else "indexed",
                doc_type="pdf" if i % 3 == 0 else "md",
                tags=["policy"] if i % 4 == 0 else ["policy_x"] if i % 4 == 1 else [],
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
    failed_pages = client.get("/api/v1/documents", params={"status": "failed", "limit": 7}, headers=headers).json()
    assert failed_pages["total"] == failed["total"] and len(failed_pages["documents"]) == 7
    assert _ids(client.get("/api/v1/documents", headers=other).json()) == ["g1"]


def test_bad_paging_parameters_are_json_client_errors(docs_api):
    client, headers, _ = docs_api
    for params in ({"cursor": "not-a-cursor"}, {"cursor": "W10"}, {"limit": 0}, {"limit": 5000}, {"offset": -1}):
        r = client.get("/api/v1/documents", params=params, headers=headers)
        assert r.status_code == 422, (params, r.text)
        assert r.json()["error"]["code"] == "validation_error"


def _all_pages(client, headers, **params) -> tuple[list[dict], list[dict]]:  # noqa: ANN001
    """Every document of a listing, page by page through ``next_cursor``, and the pages themselves."""
    docs, pages, cursor = [], [], None
    while True:
        page = client.get(
            "/api/v1/documents", params={**params, **({"cursor": cursor} if cursor else {})}, headers=headers
        )
        assert page.status_code == 200, page.text
        pages.append(page.json())
        docs += page.json()["documents"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return docs, pages


@pytest.mark.parametrize(
    ("sort", "key", "reverse"),
    [
        ("newest", lambda d: (d["updated_at"], d["id"]), True),
        ("oldest", lambda d: (d["updated_at"], d["id"]), False),
        ("title", lambda d: (d["title"], d["id"]), False),
        ("title_desc", lambda d: (d["title"], d["id"]), True),
    ],
)
def test_every_sort_pages_by_cursor_over_every_document_once_in_order(docs_api, sort, key, reverse):
    client, headers, _ = docs_api
    docs, pages = _all_pages(client, headers, sort=sort, limit=97)
    assert len(pages) == -(-COUNT // 97) and all(p["sort"] == sort for p in pages)
    ids = [d["id"] for d in docs]
    assert len(ids) == len(set(ids)) == COUNT
    assert docs == sorted(docs, key=key, reverse=reverse)
    # offset paging agrees with the cursor, for this sort too
    by_offset = client.get("/api/v1/documents", params={"sort": sort, "offset": 194, "limit": 97}, headers=headers)
    assert _ids(by_offset.json()) == _ids(pages[2])


def test_filters_by_type_and_tag_page_and_count_together(docs_api):
    client, headers, other = docs_api
    pdf_policy = [i for i in range(COUNT) if i % 3 == 0 and i % 4 == 0]
    docs, pages = _all_pages(client, headers, doc_type="pdf", tag="policy", sort="title", limit=40)
    assert sorted(d["id"] for d in docs) == [f"d{i:05d}" for i in pdf_policy]
    assert all(p["total"] == len(pdf_policy) for p in pages)
    # a tag is matched whole: "policy" is not "policy_x", and "policy_" is neither
    tagged_x = client.get("/api/v1/documents", params={"tag": "policy_x", "limit": 1}, headers=headers).json()
    assert tagged_x["total"] == len(range(1, COUNT, 4))
    assert client.get("/api/v1/documents", params={"tag": "policy_"}, headers=headers).json()["total"] == 0
    assert client.get("/api/v1/documents", params={"doc_type": "docx"}, headers=headers).json()["total"] == 0
    # another tenant's documents carry no tag of ours
    assert client.get("/api/v1/documents", params={"tag": "policy"}, headers=other).json()["total"] == 0


def test_status_counts_follow_every_filter_but_status(docs_api):
    client, headers, other = docs_api
    want = {"failed": len(range(0, COUNT, 10)), "queued": len(range(1, COUNT, 10))}
    want["indexed"] = COUNT - want["failed"] - want["queued"]
    page = client.get("/api/v1/documents", params={"status": "failed", "limit": 1}, headers=headers).json()
    counts = page["status_counts"]
    assert {k: v for k, v in counts.items() if v} == want
    assert set(counts) == {"queued", "parsing", "chunking", "embedding", "indexing", "indexed", "failed"}
    assert page["total"] == want["failed"]
    pdf = client.get("/api/v1/documents", params={"doc_type": "pdf", "limit": 1}, headers=headers).json()
    assert pdf["status_counts"]["failed"] == len([i for i in range(0, COUNT, 10) if i % 3 == 0])
    assert sum(pdf["status_counts"].values()) == pdf["total"] == len(range(0, COUNT, 3))
    assert {k: v for k, v in client.get("/api/v1/documents", headers=other).json()["status_counts"].items() if v} == {
        "indexed": 1
    }


def test_bad_sort_and_a_cursor_of_another_sort_are_json_client_errors(docs_api):
    client, headers, _ = docs_api
    newest = client.get("/api/v1/documents", params={"limit": 5}, headers=headers).json()["next_cursor"]
    for params in ({"sort": "random"}, {"sort": "title", "cursor": newest}, {"tag": "x" * 500}):
        r = client.get("/api/v1/documents", params=params, headers=headers)
        assert r.status_code == 422, (params, r.text)
        assert r.json()["error"]["code"] == "validation_error"
