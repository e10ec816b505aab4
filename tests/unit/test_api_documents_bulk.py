"""Bulk delete and bulk reindex over HTTP: each id gets the single routes' tenant, ACL and role checks, ids the caller
may not see read ``not_found`` exactly like ids that never existed, and every action is audited — on real, migrated
SQLite and PostgreSQL databases with the shared fakes (``Env`` of ``test_security_findings``). The counts per status
of the list follow the caller's ACL groups too."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from core.db import repositories as repo
from core.db.models import IngestionJob
from tests.unit.test_security_findings import Env, make_env  # noqa: F401 - the fixture the env fixture builds on

pytestmark = pytest.mark.unit


@pytest.fixture(params=["sqlite", "postgresql"])
def env(request, make_env) -> Env:  # noqa: F811
    if request.param == "postgresql":
        return make_env(database={"url": request.getfixturevalue("pg_url")})
    return make_env()


def _indexed(env: Env, *ids: str) -> None:
    """Their first ingestion is over (the fake dispatcher runs nothing), so they may be indexed again."""
    with env.container.db.session() as s:
        s.execute(update(IngestionJob).where(IngestionJob.document_id.in_(ids)).values(status="indexed"))


def _results(body: dict) -> dict[str, str]:
    return {r["id"]: r["result"] for r in body["results"]}


def _globex_document(env: Env) -> str:
    return env.container.ingest.submit(tenant_id="globex", filename="rival.md", data=b"# rival\n\nsecret").document.id


def test_bulk_delete_does_what_the_caller_may_and_hides_the_rest(env):
    mine = [env.add_document(f"doc-{i}.md") for i in range(3)]
    hr = env.add_document("payroll.md", ["hr"])
    rival = _globex_document(env)
    ids = [*mine, hr, rival, "no-such-document", mine[0]]
    r = env.client.post("/api/v1/documents/bulk-delete", json={"ids": ids}, headers=env.h("editor"))
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["action"] == "delete"
    assert _results(body) == {**dict.fromkeys(mine, "done"), hr: "not_found", rival: "not_found",
                              "no-such-document": "not_found"}
    assert [x["id"] for x in body["results"]] == [*mine, hr, rival, "no-such-document"]  # repeats once
    assert (body["done"], body["not_found"], body["forbidden"], body["conflict"]) == (3, 3, 0, 0)
    # a hidden document answers exactly like a missing one: nothing about it leaks
    hidden = {x["id"]: x for x in body["results"]}
    assert {k: v for k, v in hidden[hr].items() if k != "id"} == {
        k: v for k, v in hidden["no-such-document"].items() if k != "id"
    }
    assert "payroll" not in r.text and "rival" not in r.text
    # the hidden ones still exist; the deleted ones are gone from the list and the indexes
    assert env.client.get(f"/api/v1/documents/{hr}", headers=env.h("admin")).status_code == 200
    assert env.client.get(f"/api/v1/documents/{rival}", headers=env.h("globex")).status_code == 200
    assert env.client.get("/api/v1/documents", headers=env.h("admin")).json()["total"] == 1
    assert sorted(env.container.ingest.indexes.deleted) == sorted(mine)
    with env.container.db.session() as s:
        events = repo.list_audit(session=s, tenant_id="acme", action="document.", limit=100)
        assert sorted(e.target for e in events if e.action == "document.delete") == sorted(mine)
        (summary,) = [e for e in events if e.action == "document.bulk_delete"]
        assert summary.detail == {"requested": 6, "done": 3, "not_found": 3, "forbidden": 0, "conflict": 0}
        assert not [e for e in repo.list_audit(session=s, tenant_id="globex", limit=100) if "delete" in e.action]


def test_bulk_reindex_queues_visible_documents_and_reports_the_rest(env):
    done, busy = env.add_document("done.md"), env.add_document("busy.md")
    hr = env.add_document("payroll.md", ["hr"])
    rival = _globex_document(env)
    _indexed(env, done, hr, rival)  # busy's first ingestion is still queued: a reindex is a conflict
    sent_before = len(env.container.ingest.dispatcher.sent)
    ids = [done, busy, hr, rival]
    r = env.client.post("/api/v1/documents/bulk-reindex", json={"ids": ids}, headers=env.h("editor"))
    assert r.status_code == 200, r.text
    assert _results(r.json()) == {done: "done", busy: "conflict", hr: "not_found", rival: "not_found"}
    assert len(env.container.ingest.dispatcher.sent) == sent_before + 1
    doc = env.client.get(f"/api/v1/documents/{done}", headers=env.h("editor")).json()
    assert doc["status"] == "queued"
    # an editor in the group may reindex the hr document, like the single route
    r = env.client.post("/api/v1/documents/bulk-reindex", json={"ids": [hr, rival]}, headers=env.h("editor_hr"))
    assert _results(r.json()) == {hr: "done", rival: "not_found"}
    with env.container.db.session() as s:
        events = repo.list_audit(session=s, tenant_id="acme", action="document.", limit=100)
        assert sorted(e.target for e in events if e.action == "document.reindex") == sorted([done, hr])
        assert len([e for e in events if e.action == "document.bulk_reindex"]) == 2


def test_bulk_requests_are_checked_as_a_whole_with_json_errors(env):
    doc = env.add_document("keep.md")
    for path in ("/api/v1/documents/bulk-delete", "/api/v1/documents/bulk-reindex"):
        r = env.client.post(path, json={"ids": [doc]}, headers=env.h("agent"))  # agents may not manage documents
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
        assert env.client.post(path, json={"ids": [doc]}).status_code == 401
        for body in ({"ids": []}, {"ids": ["x"] * 501}, {"ids": ["x" * 65]}, {"ids": "x"}, {}, {"ids": [None]}):
            r = env.client.post(path, json=body, headers=env.h("editor"))
            assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", (path, body, r.text)
        r = env.client.post(path, content=b"not json", headers={**env.h("editor"), "Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["error"]["code"]
    assert env.client.get(f"/api/v1/documents/{doc}", headers=env.h("admin")).status_code == 200
    # 500 ids is allowed
    r = env.client.post("/api/v1/documents/bulk-delete", json={"ids": [f"n{i}".ljust(64, "x") for i in range(500)]},
                        headers=env.h("editor"))
    assert r.status_code == 200 and r.json()["not_found"] == 500


def test_counts_per_status_never_count_what_the_caller_cannot_see(env):
    env.add_document("public.md")
    env.add_document("payroll.md", ["hr"])
    env.add_document("salaries.md", ["hr"])
    _globex_document(env)

    def counted(key: str, **params: str) -> tuple[int, dict[str, int]]:
        body = env.client.get("/api/v1/documents", params=params, headers=env.h(key)).json()
        return body["total"], {k: v for k, v in body["status_counts"].items() if v}

    assert counted("agent") == counted("editor") == (1, {"queued": 1})
    assert counted("agent_hr") == counted("admin") == (3, {"queued": 3})
    assert counted("agent", q="payroll") == (0, {})
    assert counted("agent_hr", q="payroll") == (1, {"queued": 1})
    assert counted("globex") == (1, {"queued": 1})
