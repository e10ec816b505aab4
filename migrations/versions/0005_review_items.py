"""review queue, regression runs, analytics indexes

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 00:10:00

``review_items``: answers that need a look (thumbs-down, not found, partial) and what a reviewer marked;
``regression_runs``: replays of the reviewed items; ``answer_stats`` / ``answer_citations``: each answer's outcome,
latencies and cited documents in plain indexed columns for the usage analytics (reading them out of the messages' JSON
took over a second per report at 100k answers). Existing answers are copied in.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "review_items",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("message_id", sa.String(length=32), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("sources", sa.JSON(), nullable=False),
        sa.Column("reasons", sa.JSON(), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("expected_chunk_id", sa.String(length=32), nullable=True),
        sa.Column("expected_document_id", sa.String(length=32), nullable=True),
        sa.Column("expected_title", sa.String(length=512), nullable=False),
        sa.Column("expected_section", sa.JSON(), nullable=False),
        sa.Column("expected_facts", sa.JSON(), nullable=False),
        sa.Column("document_missing", sa.Boolean(), nullable=False),
        sa.Column("reviewer_id", sa.String(length=32), nullable=True),
        sa.Column("reviewed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("message_id"),
    )
    op.create_index(
        "ix_review_items_tenant_status_created", "review_items", ["tenant_id", "status", "created_at"], unique=False
    )
    op.create_table(
        "regression_runs",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("actor_name", sa.String(length=254), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("passed", sa.Integer(), nullable=False),
        sa.Column("previous_run_id", sa.String(length=32), nullable=True),
        sa.Column("results", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_regression_runs_tenant_started", "regression_runs", ["tenant_id", "started_at"], unique=False)
    op.create_table(
        "answer_stats",
        sa.Column("message_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("first_token_ms", sa.Float(), nullable=True),
        sa.Column("total_ms", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("message_id"),
    )
    op.create_index("ix_answer_stats_tenant_created", "answer_stats", ["tenant_id", "created_at"], unique=False)
    op.create_table(
        "answer_citations",
        sa.Column("message_id", sa.String(length=32), nullable=False),
        sa.Column("document_id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["message_id"], ["messages.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("message_id", "document_id"),
    )
    op.create_index(
        "ix_answer_citations_tenant_created_doc",
        "answer_citations",
        ["tenant_id", "created_at", "document_id"],
        unique=False,
    )
    _copy_existing_answers()


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _copy_existing_answers(batch: int = 2000) -> None:
    """Fill the analytics tables from the answers already stored (meta and citations of assistant messages)."""
    bind = op.get_bind()
    msgs = sa.table(
        "messages", sa.column("id"), sa.column("conversation_id"), sa.column("role"),
        sa.column("citations", sa.JSON()), sa.column("meta", sa.JSON()), sa.column("created_at"),
    )
    convs = sa.table("conversations", sa.column("id"), sa.column("tenant_id"))
    stats = sa.table(
        "answer_stats", sa.column("message_id"), sa.column("tenant_id"), sa.column("created_at"),
        sa.column("outcome"), sa.column("first_token_ms"), sa.column("total_ms"),
    )
    cites = sa.table(
        "answer_citations", sa.column("message_id"), sa.column("document_id"), sa.column("tenant_id"),
        sa.column("created_at"),
    )
    rows = list(bind.execute(
        sa.select(msgs.c.id, convs.c.tenant_id, msgs.c.created_at, msgs.c.meta, msgs.c.citations)
        .select_from(msgs.join(convs, convs.c.id == msgs.c.conversation_id))
        .where(msgs.c.role == "assistant")
    ))
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        stat_rows, cite_rows = [], []
        for mid, tenant, created, meta, citations in chunk:
            meta = meta or {}
            timings = meta.get("timings_ms") or {}
            outcome = meta.get("outcome") or ("not_found" if meta.get("refused") else "answered")
            stat_rows.append({
                "message_id": mid, "tenant_id": tenant, "created_at": created, "outcome": str(outcome)[:16],
                "first_token_ms": _number(timings.get("first_token")), "total_ms": _number(timings.get("total")),
            })
            docs = {c.get("document_id") for c in citations or [] if isinstance(c, dict) and c.get("document_id")}
            cite_rows += [
                {"message_id": mid, "document_id": str(d)[:32], "tenant_id": tenant, "created_at": created}
                for d in sorted(docs)
            ]
        bind.execute(stats.insert(), stat_rows)
        if cite_rows:
            bind.execute(cites.insert(), cite_rows)


def downgrade() -> None:
    op.drop_index("ix_answer_citations_tenant_created_doc", table_name="answer_citations")
    op.drop_table("answer_citations")
    op.drop_index("ix_answer_stats_tenant_created", table_name="answer_stats")
    op.drop_table("answer_stats")
    op.drop_index("ix_regression_runs_tenant_started", table_name="regression_runs")
    op.drop_table("regression_runs")
    op.drop_index("ix_review_items_tenant_status_created", table_name="review_items")
    op.drop_table("review_items")
