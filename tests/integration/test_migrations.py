"""Alembic: upgrade head, downgrade base, upgrade head on SQLite and on PostgreSQL; the schema matches the models."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from core.db.models import Base

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]


def _config(url: str) -> Config:
    cfg = Config(str(REPO / "alembic.ini"))
    cfg.set_main_option("script_location", str(REPO / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url)
    return cfg


def _round_trip(url: str) -> None:
    cfg = _config(url)
    command.upgrade(cfg, "head")
    command.downgrade(cfg, "base")
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        left = set(sa.inspect(conn).get_table_names()) - {"alembic_version"}
    assert left == set(), f"downgrade left tables behind: {left}"
    command.upgrade(cfg, "head")
    with engine.connect() as conn:
        tables = set(sa.inspect(conn).get_table_names())
        assert set(Base.metadata.tables) <= tables
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    engine.dispose()
    assert diff == [], f"models and migrations differ: {diff}"


def test_migrations_sqlite(tmp_path):
    _round_trip(f"sqlite:///{tmp_path / 'kbqa.db'}")


def test_migrations_postgresql(pg_url):
    _round_trip(pg_url)


def test_repositories_on_postgresql(pg_url):
    """The repository layer works on PostgreSQL too (JSON columns, upserts of usage, cascades)."""
    from core.db import repositories as repo
    from core.db.session import Database
    from core.types import Actor, Role
    from ingestion import state

    command.upgrade(_config(pg_url), "head")
    db = Database(pg_url)
    with db.session() as s:
        key, secret = repo.create_api_key(session=s, tenant_id="t1", name="k", role=Role.EDITOR, acl_groups=["hr"])
        actor = Actor(kind="key", id=key.id, name=key.name)
        user = repo.create_user(
            session=s, tenant_id="t1", email="Ana@Example.com", name="Ana", role=Role.AGENT, password="long enough pw"
        )
        repo.record_usage(
            session=s, tenant_id="t1", actor=Actor("user", user.id, "Ana"), prompt_tokens=1, completion_tokens=1
        )
        repo.audit(session=s, tenant_id="t1", actor=actor, action="document.upload", target="d1")
        doc = repo.create_document(session=s, tenant_id="t1", filename="a.md", content_hash="h" * 64, tags=["x"])
        job = state.create_job(session=s, document=doc)
        assert set(job.stages) == {"parsing", "chunking", "embedding", "indexing"}
        conv = repo.create_conversation(session=s, tenant_id="t1", actor_id=key.id, title="q")
        msg = repo.add_message(session=s, conversation_id=conv.id, role="assistant", content="a", citations=[{"n": 1}])
        repo.create_feedback(session=s, tenant_id="t1", message_id=msg.id, actor_id=key.id, rating="up", comment="")
        repo.record_usage(session=s, tenant_id="t1", actor=actor, prompt_tokens=5, completion_tokens=3)
        repo.record_usage(session=s, tenant_id="t1", actor=actor, prompt_tokens=5, completion_tokens=3)
    with db.session() as s:
        assert repo.get_api_key_by_secret(session=s, secret=secret).acl_groups == ["hr"]
        assert key.key_hash != secret and secret not in key.key_hash
        by_name = {name: usage for usage, name in repo.list_usage(session=s, tenant_id="t1")}
        assert set(by_name) == {"k", "Ana"}
        usage = by_name["k"]
        assert (usage.actor_kind, usage.requests, usage.prompt_tokens, usage.completion_tokens) == ("key", 2, 10, 6)
        assert repo.get_user_by_email(session=s, email=" ana@example.COM", tenant_id="t1").name == "Ana"
        (event,) = repo.list_audit(session=s, tenant_id="t1", action="document.")
        assert (event.actor_kind, event.actor_name, event.target) == ("key", "k", "d1")
        claimed = state.claim(session=s, job_id=job.id, owner="w1", lease_s=60, max_attempts=2)
        assert claimed is not None and claimed.attempts == 1
    with db.session() as s:
        assert state.claim(session=s, job_id=job.id, owner="w2", lease_s=60, max_attempts=2) is None
        repo.delete_document(session=s, document=repo.get_document(session=s, tenant_id="t1", document_id=doc.id))
    with db.session() as s:
        assert repo.list_documents(session=s, tenant_id="t1") == []
    db.dispose()


def _upgrade_keeps_rows(url: str) -> None:
    """Rows written under 0001 (api_key_id columns) survive 0002 as key actors, named from their key."""
    cfg = _config(url)
    command.upgrade(cfg, "0001")
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO tenants (id, name, created_at) VALUES ('t1', 't1', CURRENT_TIMESTAMP)"))
        conn.execute(
            sa.text(
                "INSERT INTO api_keys (id, tenant_id, name, role, prefix, key_hash, acl_groups, created_at) "
                "VALUES ('k1', 't1', 'ops', 'admin', 'kbqa_x', 'h', '[]', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO audit_events (tenant_id, api_key_id, action, target, detail, created_at) "
                "VALUES ('t1', 'k1', 'document.upload', 'd1', '{}', CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO token_usage (tenant_id, api_key_id, day, requests, prompt_tokens, completion_tokens, "
                "latency_ms_total) VALUES ('t1', 'k1', '2026-11-01', 3, 30, 9, 1.0)"
            )
        )
        conn.execute(
            sa.text(
                "INSERT INTO conversations (id, tenant_id, api_key_id, title, created_at, updated_at) "
                "VALUES ('c1', 't1', 'k1', 'q', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)"
            )
        )
    command.upgrade(cfg, "head")
    with engine.connect() as conn:
        audit = conn.execute(sa.text("SELECT actor_kind, actor_id, actor_name FROM audit_events")).one()
        usage = conn.execute(sa.text("SELECT actor_kind, actor_id, requests FROM token_usage")).one()
        conv = conn.execute(sa.text("SELECT actor_id FROM conversations")).one()
    engine.dispose()
    assert tuple(audit) == ("key", "k1", "ops")
    assert tuple(usage) == ("key", "k1", 3)
    assert tuple(conv) == ("k1",)
    command.downgrade(cfg, "0001")
    command.upgrade(cfg, "head")


def test_upgrade_from_0001_keeps_rows_sqlite(tmp_path):
    _upgrade_keeps_rows(f"sqlite:///{tmp_path / 'kbqa.db'}")


def test_upgrade_from_0001_keeps_rows_postgresql(pg_url):
    _upgrade_keeps_rows(pg_url)
