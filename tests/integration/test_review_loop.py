"""The review loop on real parts (demo documents through the real parsers, MiniLM, tantivy and vector indexes, the real
answer pipeline) on SQLite and on PostgreSQL: answers that ended not found and thumbs-down feedback enter the review
queue; an editor searches a section, marks it and writes facts; an admin replays the regression set (API and
`kbqa eval answers`); the gaps report and usage analytics read the same data."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from app.cli import migrate_database
from core.db import repositories as repo
from core.settings import Settings
from core.types import Role
from tests.conftest import PG_ADMIN_URL, _pg_reachable, service_missing
from tests.sse import parse_sse

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
DOCS = ["troubleshooting-guide.pdf", "return-and-warranty-policy.docx", "billing-faq.md"]
RESTRICTED = "shipping-policy.md"  # ACL group "ops"

OFFLINE = "My Kestrel Cam 2 keeps going offline at night. What should I check?"
DOORBELL = "What is the warranty on the Kestrel Doorbell Pro?"
SHIPPING = "How long does standard shipping take?"


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def loop(request, tmp_path_factory):
    from app.main import build_container, create_app
    from core.settings import Settings

    data_dir = tmp_path_factory.mktemp("kbqa") / "data"
    database: dict[str, str] = {}
    pg_name = None
    if request.param == "postgresql":
        if not _pg_reachable():
            service_missing("PostgreSQL not reachable")
        pg_name = f"kbqa_t_{uuid.uuid4().hex[:12]}"
        admin = sa.create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{pg_name}"'))
        database = {"url": PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{pg_name}"}
    settings = Settings(
        _env_file=None, data_dir=data_dir, database=database, api={"requests_per_minute": 0, "tokens_per_minute": 0},
        retrieval={"timeout_s": 30.0},  # a busy test machine must not turn answers into not-found by timeouts
    )
    migrate_database(settings)
    container = build_container(settings)
    for name in DOCS:
        container.ingest.submit(tenant_id="default", filename=name, data=(REPO / "demo" / "kb" / name).read_bytes())
    container.ingest.submit(
        tenant_id="default", filename=RESTRICTED, data=(REPO / "demo" / "kb" / RESTRICTED).read_bytes(),
        acl_groups=["ops"],
    )
    container.dispatcher.wait(timeout=600)
    keys = {}
    with container.db.session() as s:
        for name, role, groups in [
            ("admin", Role.ADMIN, []), ("editor", Role.EDITOR, []), ("ops-editor", Role.EDITOR, ["ops"]),
            ("agent", Role.AGENT, []),
        ]:
            _, keys[name] = repo.create_api_key(
                session=s, tenant_id="default", name=name, role=role, acl_groups=groups
            )
    app = create_app(settings, container=container, sweeper=False)
    env = {**os.environ, "KBQA_DATA_DIR": str(data_dir), "KBQA_DATABASE__URL": database.get("url", "")}
    if not database:
        env.pop("KBQA_DATABASE__URL")
    with TestClient(app) as client:
        yield client, {k: {"Authorization": f"Bearer {v}"} for k, v in keys.items()}, env
    container.close()
    if pg_name:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{pg_name}" WITH (FORCE)'))
        admin.dispose()


def ask(client, headers, question):  # noqa: ANN001, ANN201
    r = client.post("/api/v1/ask", json={"question": question}, headers=headers)
    assert r.status_code == 200, r.text
    events = dict(parse_sse(r.text))
    done = {**events["done"], "citations": events["citations"]["citations"]}
    return events["meta"]["message_id"], done


def item_for(items, question):  # noqa: ANN001, ANN201
    found = [i for i in items if i["question"] == question]
    assert len(found) == 1, [i["question"] for i in items]
    return found[0]


def test_the_review_loop(loop):
    client, h, env = loop
    # 1. answers: one good (then disliked), one not found, one from a document only "ops" may see (disliked)
    offline_id, done = ask(client, h["agent"], OFFLINE)
    assert done["outcome"] == "answered" and done["citations"]
    cited_chunk = done["citations"][0]["chunk_id"]  # the reviewer confirms the section the answer cited
    fact = " ".join(done["answer"].split("\n", 1)[-1].split()[:4])  # ... and a phrase of the answer as a fact
    _, done = ask(client, h["agent"], DOORBELL)
    assert done["outcome"] in ("not_found", "partial")
    r = client.post("/api/v1/feedback", json={"message_id": offline_id, "rating": "down", "comment": "too vague"},
                    headers=h["agent"])
    assert r.status_code == 201
    ship_id, done = ask(client, h["admin"], SHIPPING)
    client.post("/api/v1/feedback", json={"message_id": ship_id, "rating": "down"}, headers=h["admin"])
    # a thumbs-up queues nothing
    ok_id, _ = ask(client, h["agent"], "How do I restart my router after it went offline?")
    client.post("/api/v1/feedback", json={"message_id": ok_id, "rating": "up"}, headers=h["agent"])

    # 2. the queue: editors only; sources limited to the reviewer's documents
    assert client.get("/api/v1/review/items", headers=h["agent"]).json()["error"]["code"] == "forbidden"
    items = client.get("/api/v1/review/items", headers=h["editor"]).json()["items"]
    assert len(items) == 3
    offline = item_for(items, OFFLINE)
    assert offline["reasons"] == ["thumbs_down"] and offline["comment"] == "too vague"
    assert offline["outcome"] == "answered" and offline["sources"] and offline["status"] == "open"
    assert any(s["title"] for s in offline["sources"])
    doorbell = item_for(items, DOORBELL)
    assert doorbell["reasons"][0] in ("not_found", "partial")
    ship_editor = item_for(items, SHIPPING)
    ops_items = client.get("/api/v1/review/items", headers=h["ops-editor"]).json()["items"]
    ship_ops = item_for(ops_items, SHIPPING)
    assert ship_ops["hidden_sources"] == 0 and any("hipping" in s["title"] for s in ship_ops["sources"])
    assert ship_editor["hidden_sources"] > 0
    assert not any("hipping" in s["title"] for s in ship_editor["sources"])

    # 3. review: search inside the item (the product's search, the reviewer's filter), mark section, write facts
    hits = client.get(f"/api/v1/review/items/{offline['id']}/search", headers=h["editor"]).json()
    assert hits["query"] == OFFLINE
    assert hits["results"] and all("hipping" not in x["title"] for x in hits["results"])
    section = client.get(f"/api/v1/chunks/{cited_chunk}", headers=h["editor"]).json()
    hidden = client.get(f"/api/v1/review/items/{ship_editor['id']}/search", headers=h["editor"]).json()["results"]
    assert not any("hipping" in x["title"] for x in hidden)
    ops_hits = client.get(f"/api/v1/review/items/{ship_ops['id']}/search?q=shipping", headers=h["ops-editor"])
    ship_chunk = next(x for x in ops_hits.json()["results"] if "hipping" in x["title"])["chunk_id"]
    r = client.put(f"/api/v1/review/items/{ship_editor['id']}", json={"chunk_id": ship_chunk}, headers=h["editor"])
    assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"  # not the editor's document
    r = client.put(f"/api/v1/review/items/{offline['id']}", json={}, headers=h["editor"])
    assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error"
    r = client.put(
        f"/api/v1/review/items/{offline['id']}",
        json={"chunk_id": section["chunk_id"], "facts": [fact]},
        headers=h["editor"],
    )
    assert r.status_code == 200, r.text
    reviewed = r.json()
    assert reviewed["status"] == "reviewed" and reviewed["expected"]["section_path"] == section["section_path"]
    r = client.put(f"/api/v1/review/items/{doorbell['id']}", json={"document_missing": True}, headers=h["editor"])
    assert r.json()["expected"]["document_missing"] is True
    assert client.put("/api/v1/review/items/nope", json={"facts": ["x"]}, headers=h["editor"]).status_code == 404
    regression = client.get("/api/v1/review/regression", headers=h["editor"]).json()["items"]
    assert {i["question"] for i in regression} == {OFFLINE, DOORBELL}
    assert len(client.get("/api/v1/review/items", headers=h["editor"]).json()["items"]) == 1  # still open

    # 4. regression runs: admin only; replayed through the answer pipeline; diff against the last run
    assert client.post("/api/v1/review/runs", headers=h["editor"]).status_code == 403
    r = client.post("/api/v1/review/runs", headers=h["admin"])
    assert r.status_code == 201, r.text
    first = r.json()
    by_q = {x["question"]: x for x in first["results"]}
    assert first["total"] == 2 and first["passed"] == 2, [
        (x["cited_sections"], x["expected_section"], x["facts_ok"], x["answer"]) for x in by_q.values()
    ]
    assert by_q[OFFLINE]["section_ok"] and by_q[OFFLINE]["facts_ok"] and by_q[OFFLINE]["change"] == "new"
    assert by_q[DOORBELL]["document_missing_ok"] is True
    client.put(
        f"/api/v1/review/items/{offline['id']}",
        json={"chunk_id": section["chunk_id"], "facts": [fact, "reinstall the moon"]},
        headers=h["editor"],
    )
    second = client.post("/api/v1/review/runs", headers=h["admin"]).json()
    by_q = {x["question"]: x for x in second["results"]}
    assert second["previous_run_id"] == first["id"] and second["passed"] == 1
    assert by_q[OFFLINE]["change"] == "broke" and by_q[OFFLINE]["missing_facts"] == ["reinstall the moon"]
    assert by_q[DOORBELL]["change"] == "same"
    runs = client.get("/api/v1/review/runs", headers=h["editor"]).json()["runs"]
    assert [x["id"] for x in runs] == [second["id"], first["id"]]
    assert client.get(f"/api/v1/review/runs/{first['id']}", headers=h["editor"]).json()["passed"] == 2

    # 5. the same replay from the command line (its own process, same database), then "fixed"
    client.put(
        f"/api/v1/review/items/{offline['id']}",
        json={"chunk_id": section["chunk_id"], "facts": [fact]},
        headers=h["editor"],
    )
    cli = subprocess.run(
        [sys.executable, "-m", "app.cli", "eval", "answers", "--tenant", "default"],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env={**env, "COLUMNS": "200", "KBQA_RETRIEVAL__TIMEOUT_S": "30"},
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert "2/2 passed" in cli.stdout and "fixed 1" in cli.stdout
    runs = client.get("/api/v1/review/runs", headers=h["editor"]).json()["runs"]
    assert runs[0]["actor_name"] == "cli" and runs[0]["changes"]["fixed"] == 1

    # 5b. side by side, before a change goes live (SQLite: a staging copy is a copy of the data dir): a faithful
    # copy changes nothing; an empty staging copy (a reindex that lost the documents) breaks the offline item, exit
    # 1 (the "document missing" item still passes: nothing is claimed)
    if "KBQA_DATABASE__URL" not in env:
        live_dir = Path(env["KBQA_DATA_DIR"])
        copy_dir, empty_dir = live_dir.parent / "staging-copy", live_dir.parent / "staging-empty"
        shutil.copytree(live_dir, copy_dir)
        migrate_database(Settings(_env_file=None, data_dir=empty_dir))
        for staging, rc, summary in [(copy_dir, 0, "candidate 2/2 passed (same 2)"),
                                     (empty_dir, 1, "candidate 1/2 passed (same 1, broke 1)")]:
            side = subprocess.run(
                [sys.executable, "-m", "app.cli", "eval", "answers", "--tenant", "default",
                 "--candidate-data-dir", str(staging)],
                capture_output=True, text=True, timeout=300, cwd=REPO,
                env={**env, "COLUMNS": "200", "KBQA_RETRIEVAL__TIMEOUT_S": "30"},
            )
            assert side.returncode == rc, side.stdout + side.stderr
            assert f"live 2/2 passed, {summary}" in side.stdout, side.stdout
        # side-by-side runs are not stored as runs
        assert client.get("/api/v1/review/runs", headers=h["editor"]).json()["runs"][0]["id"] == runs[0]["id"]

    # 6. knowledge gaps: editors; topics with counts, trend, examples, nearest documents; CSV export
    assert client.get("/api/v1/review/gaps", headers=h["agent"]).status_code == 403
    gaps = client.get("/api/v1/review/gaps", headers=h["editor"]).json()
    assert gaps["total"] == 3 and sum(t["count"] for t in gaps["topics"]) == 3
    topic = next(t for t in gaps["topics"] if DOORBELL in t["examples"])
    assert topic["trend"][-1] >= 1 and len(topic["trend"]) == 30 and topic["terms"]
    assert topic["documents"] and all("hipping" not in d["title"] for t in gaps["topics"] for d in t["documents"])
    csv_r = client.get("/api/v1/review/gaps?format=csv", headers=h["editor"])
    assert csv_r.headers["content-type"].startswith("text/csv")
    assert csv_r.text.splitlines()[0].startswith("topic,count,") and DOORBELL in csv_r.text

    # 7. usage analytics: admins
    assert client.get("/api/v1/analytics", headers=h["editor"]).status_code == 403
    a = client.get("/api/v1/analytics", headers=h["admin"]).json()
    assert a["questions_per_day"][-1]["questions"] == 4 and len(a["questions_per_day"]) == 31
    assert a["outcome_mix"]["answered"] >= 2 and a["outcome_mix"]["not_found"] + a["outcome_mix"]["partial"] >= 1
    assert a["latency_ms"]["total"]["count"] == 4 and a["latency_ms"]["total"]["p50"] > 0
    assert a["latency_ms"]["first_token"]["p95"] >= a["latency_ms"]["first_token"]["p50"] > 0
    cited = {d["title"]: d["answers"] for d in a["most_cited"]}
    assert any("roubleshooting" in t for t in cited), cited
    never = {d["title"] for d in a["never_cited"]["documents"]}
    assert not never & set(cited) and a["never_cited"]["count"] == len(never)
