"""Alembic: upgrade head, downgrade base, upgrade head on SQLite and on PostgreSQL; the schema matches the models."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext

from app.core.db.models import Base

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
    from app.core.db import repositories as repo
    from app.core.db.session import Database
    from app.core.types import Role

    command.upgrade(_config(pg_url), "head")
    db = Database(pg_url)
    with db.session() as s:
        key, secret = repo.create_api_key(session=s, tenant_id="t1", name="k", role=Role.EDITOR, acl_groups=["hr"])
        doc = repo.create_document(session=s, tenant_id="t1", filename="a.md", content_hash="h" * 64, tags=["x"])
        job = repo.create_job(session=s, document=doc)
        assert set(job.stages) == {"parsing", "chunking", "embedding", "indexing"}
        conv = repo.create_conversation(session=s, tenant_id="t1", api_key_id=key.id, title="q")
        msg = repo.add_message(session=s, conversation_id=conv.id, role="assistant", content="a", citations=[{"n": 1}])
        repo.create_feedback(session=s, tenant_id="t1", message_id=msg.id, api_key_id=key.id, rating="up", comment="")
        repo.record_usage(session=s, tenant_id="t1", api_key_id=key.id, prompt_tokens=5, completion_tokens=3)
        repo.record_usage(session=s, tenant_id="t1", api_key_id=key.id, prompt_tokens=5, completion_tokens=3)
    with db.session() as s:
        assert repo.get_api_key_by_secret(session=s, secret=secret).acl_groups == ["hr"]
        assert key.key_hash != secret and secret not in key.key_hash
        ((usage, name),) = repo.list_usage(session=s, tenant_id="t1")
        assert (usage.requests, usage.prompt_tokens, usage.completion_tokens, name) == (2, 10, 6, "k")
        claimed = repo.claim_job(session=s, job_id=job.id, owner="w1", lease_s=60, max_attempts=2)
        assert claimed is not None and claimed.attempts == 1
    with db.session() as s:
        assert repo.claim_job(session=s, job_id=job.id, owner="w2", lease_s=60, max_attempts=2) is None
        repo.delete_document(session=s, document=repo.get_document(session=s, tenant_id="t1", document_id=doc.id))
    with db.session() as s:
        assert repo.list_documents(session=s, tenant_id="t1") == []
    db.dispose()
