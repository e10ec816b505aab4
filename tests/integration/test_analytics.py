"""Usage analytics on migrated SQLite and PostgreSQL databases with known rows: both dialects give the same numbers,
and they are the numbers the rows imply (percentiles recomputed here, counts by construction)."""

from __future__ import annotations

import datetime as dt
import json
import random

import pytest
import sqlalchemy as sa
from alembic import command

from app.services import analytics
from core.db import repositories as repo
from core.db.models import Document, Message
from core.db.session import Database
from tests.integration.test_migrations import _config

pytestmark = pytest.mark.integration

NOW = dt.datetime(2026, 11, 30, 12, 0, tzinfo=dt.timezone.utc)


def _python_percentile(values: list[float], p: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


@pytest.fixture(params=["sqlite", "postgresql"])
def db(request, tmp_path):
    url = request.getfixturevalue("pg_url") if request.param == "postgresql" else f"sqlite:///{tmp_path / 'a.db'}"
    command.upgrade(_config(url), "head")
    database = Database(url)
    yield database
    database.dispose()


def answer(s, tenant_id: str, msg: Message) -> None:  # noqa: ANN001
    """Store an answer as the ask route does: the message, then its analytics rows."""
    s.add(msg)
    s.flush()
    analytics.record_answer(session=s, tenant_id=tenant_id, message=msg)


def _seed(db: Database) -> dict:
    rng = random.Random(7)
    outcomes = {"answered": 0, "partial": 0, "not_found": 0}
    expected: dict = {"per_day": {}, "first": [], "total": [], "outcomes": outcomes}
    with db.session() as s:
        repo.get_or_create_tenant(session=s, tenant_id="acme")
        repo.get_or_create_tenant(session=s, tenant_id="other")
        docs = []
        for i in range(4):
            d = Document(tenant_id="acme", filename=f"d{i}.md", title=f"Doc {i}", content_hash=f"h{i}",
                         status="indexed", created_at=NOW - dt.timedelta(days=200 - i))
            s.add(d)
            docs.append(d)
        s.add(Document(tenant_id="other", filename="x.md", title="Other", content_hash="hx", status="indexed"))
        s.flush()
        for i in range(60):
            at = NOW - dt.timedelta(days=i % 10, hours=i % 5)
            conv = repo.create_conversation(session=s, tenant_id="acme", actor_id="a" * 32, title="q")
            s.add(Message(conversation_id=conv.id, role="user", content=f"q{i}", created_at=at))
            outcome = ("answered", "partial", "not_found")[i % 3]
            first, total = round(rng.uniform(50, 900), 2), round(rng.uniform(900, 4000), 2)
            cites = [{"document_id": docs[i % 2].id, "chunk_id": "c"}, {"document_id": docs[i % 2].id}]
            if i % 6 == 0:
                cites.append({"document_id": docs[2].id})
            answer(s, "acme", Message(conversation_id=conv.id, role="assistant", content="a", created_at=at,
                                      citations=cites if outcome != "not_found" else [],
                                      meta={"outcome": outcome, "timings_ms": {"first_token": first, "total": total}}))
            day = at.date().isoformat()
            expected["per_day"][day] = expected["per_day"].get(day, 0) + 1
            expected["first"].append(first)
            expected["total"].append(total)
            expected["outcomes"][outcome] += 1
        # old question (outside 30 days) and another tenant's: not counted
        conv = repo.create_conversation(session=s, tenant_id="acme", actor_id=None, title="old")
        s.add(Message(conversation_id=conv.id, role="user", content="old", created_at=NOW - dt.timedelta(days=40)))
        answer(s, "acme", Message(conversation_id=conv.id, role="assistant", content="a",
                                  created_at=NOW - dt.timedelta(days=40), citations=[{"document_id": docs[3].id}],
                                  meta={"outcome": "answered"}))
        conv = repo.create_conversation(session=s, tenant_id="other", actor_id=None, title="x")
        s.add(Message(conversation_id=conv.id, role="user", content="x", created_at=NOW))
        answer(s, "other", Message(conversation_id=conv.id, role="assistant", content="a", created_at=NOW,
                                   citations=[{"document_id": docs[0].id}], meta={"outcome": "partial"}))
        expected["docs"] = [d.id for d in docs]
    return expected


def test_reports_match_the_rows(db):
    expected = _seed(db)
    with db.session() as s:
        report = analytics.usage_report(session=s, tenant_id="acme", days=30, now=NOW)
    per_day = {d["day"]: d["questions"] for d in report["questions_per_day"] if d["questions"]}
    assert per_day == expected["per_day"]
    assert len(report["questions_per_day"]) == 31 and report["questions_per_day"][-1]["day"] == "2026-11-30"
    assert report["outcome_mix"] == expected["outcomes"]
    for name, values in (("first_token", expected["first"]), ("total", expected["total"])):
        got = report["latency_ms"][name]
        assert got["count"] == 60
        for p in analytics.PERCENTILES:
            assert got[f"p{p}"] == pytest.approx(_python_percentile(values, p), abs=0.11), (name, p)
    d0, d1, d2, d3 = expected["docs"]
    # answers citing each document (each answer counts once however often it cites it); not_found answers cite none
    cited = {d["document_id"]: d["answers"] for d in report["most_cited"]}
    assert cited == {d0: 20, d1: 20, d2: 10}
    assert report["most_cited"][0]["title"] in ("Doc 0", "Doc 1")
    # doc 3 was cited 40 days ago only: never cited in 30 days, but cited within 90
    assert report["never_cited"]["count"] == 0
    with db.session() as s:
        never = analytics.never_cited_documents(session=s, tenant_id="acme", days=30, now=NOW)
    assert [d["document_id"] for d in never["documents"]] == [d3]


def test_empty_tenant(db):
    with db.session() as s:
        report = analytics.usage_report(session=s, tenant_id="nobody", days=7, now=NOW)
    assert report["outcome_mix"] == {"answered": 0, "partial": 0, "not_found": 0}
    assert report["latency_ms"]["total"] == {"count": 0, "p50": 0.0, "p90": 0.0, "p95": 0.0, "p99": 0.0}
    assert report["most_cited"] == [] and report["never_cited"]["count"] == 0
    assert sum(d["questions"] for d in report["questions_per_day"]) == 0


def test_the_migration_copies_existing_answers(tmp_path):
    """Answers stored before 0005 (meta and citations only) reach the analytics tables on upgrade."""
    url = f"sqlite:///{tmp_path / 'old.db'}"
    command.upgrade(_config(url), "0004")
    database = Database(url)
    with database.engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO tenants (id, name, created_at) VALUES ('acme', 'acme', :t)"), {"t": NOW})
        conn.execute(sa.text("INSERT INTO conversations (id, tenant_id, title, created_at, updated_at) "
                             "VALUES ('c1', 'acme', 't', :t, :t)"), {"t": NOW})
        for mid, meta, cites in [
            ("m1", {"refused": True, "timings_ms": {"total": 12.5}}, []),
            ("m2", {"refused": False, "timings_ms": {"first_token": 3, "total": 40}},
             [{"document_id": "d1"}, {"document_id": "d1"}, {"document_id": "d2"}]),
        ]:
            conn.execute(sa.text("INSERT INTO messages (id, conversation_id, role, content, citations, meta, "
                                 "created_at) VALUES (:id, 'c1', 'assistant', 'a', :c, :m, :t)"),
                         {"id": mid, "c": json.dumps(cites), "m": json.dumps(meta), "t": NOW})
    command.upgrade(_config(url), "head")
    with database.session() as s:
        mix = analytics.outcome_mix(session=s, tenant_id="acme", days=1, now=NOW)
        cited = {d["document_id"]: d["answers"] for d in analytics.most_cited_documents(
            session=s, tenant_id="acme", days=1, now=NOW)}
        lat = analytics.latency_percentiles(session=s, tenant_id="acme", days=1, now=NOW)
    database.dispose()
    assert mix == {"answered": 1, "partial": 0, "not_found": 1}
    assert cited == {"d1": 1, "d2": 1}
    assert lat["total"]["count"] == 2 and lat["first_token"]["count"] == 1 and lat["first_token"]["p50"] == 3.0
