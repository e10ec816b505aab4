"""users with passwords; conversations, feedback, usage and audit record an actor (API key or user)

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-30 08:00:00

Until 0001 the only principal was an API key, so four tables had an ``api_key_id`` column. With user accounts the
principal is a key *or* a user; both have 32-hex ids, so the column becomes ``actor_id``. Usage and audit rows also
record ``actor_kind`` so their listings can name the actor; audit rows copy the actor's name at the time of the event.
Existing rows are kept and backfilled as key actors.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "users",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("email", sa.String(length=254), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("acl_groups", sa.JSON(), nullable=False),
        sa.Column("password_hash", sa.String(length=256), nullable=False),
        sa.Column("failed_logins", sa.Integer(), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_login_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("password_changed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenants.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
    )
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_users_tenant_id"), ["tenant_id"], unique=False)

    # SQLite recreates the table per batch, so a renamed column is only indexable in the next batch.
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index("ix_conversations_api_key_id")
        batch_op.alter_column("api_key_id", new_column_name="actor_id", existing_type=sa.String(length=32))
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_conversations_actor_id"), ["actor_id"], unique=False)

    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.alter_column("api_key_id", new_column_name="actor_id", existing_type=sa.String(length=32))

    with op.batch_alter_table("token_usage", schema=None) as batch_op:
        batch_op.drop_constraint("uq_token_usage_key_day", type_="unique")
        batch_op.drop_index("ix_token_usage_api_key_id")
        batch_op.alter_column(
            "api_key_id", new_column_name="actor_id", existing_type=sa.String(length=32), existing_nullable=False
        )
        batch_op.add_column(sa.Column("actor_kind", sa.String(length=8), nullable=False, server_default="key"))
    with op.batch_alter_table("token_usage", schema=None) as batch_op:
        batch_op.alter_column("actor_kind", server_default=None, existing_type=sa.String(length=8))
        batch_op.create_index(batch_op.f("ix_token_usage_actor_id"), ["actor_id"], unique=False)
        batch_op.create_unique_constraint("uq_token_usage_actor_day", ["actor_id", "day"])

    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.alter_column("api_key_id", new_column_name="actor_id", existing_type=sa.String(length=32))
        batch_op.add_column(sa.Column("actor_kind", sa.String(length=8), nullable=False, server_default="system"))
        batch_op.add_column(sa.Column("actor_name", sa.String(length=254), nullable=False, server_default=""))
    op.execute(
        "UPDATE audit_events SET actor_kind = 'key', "
        "actor_name = COALESCE((SELECT name FROM api_keys WHERE api_keys.id = audit_events.actor_id), '') "
        "WHERE actor_id IS NOT NULL"
    )
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.alter_column("actor_kind", server_default=None, existing_type=sa.String(length=8))
        batch_op.alter_column("actor_name", server_default=None, existing_type=sa.String(length=254))


def downgrade() -> None:
    # Rows written by users keep their actor id in the renamed column; user rows themselves are dropped.
    with op.batch_alter_table("audit_events", schema=None) as batch_op:
        batch_op.drop_column("actor_name")
        batch_op.drop_column("actor_kind")
        batch_op.alter_column("actor_id", new_column_name="api_key_id", existing_type=sa.String(length=32))

    with op.batch_alter_table("token_usage", schema=None) as batch_op:
        batch_op.drop_constraint("uq_token_usage_actor_day", type_="unique")
        batch_op.drop_index(batch_op.f("ix_token_usage_actor_id"))
        batch_op.drop_column("actor_kind")
        batch_op.alter_column(
            "actor_id", new_column_name="api_key_id", existing_type=sa.String(length=32), existing_nullable=False
        )
    with op.batch_alter_table("token_usage", schema=None) as batch_op:
        batch_op.create_index("ix_token_usage_api_key_id", ["api_key_id"], unique=False)
        batch_op.create_unique_constraint("uq_token_usage_key_day", ["api_key_id", "day"])

    with op.batch_alter_table("feedback", schema=None) as batch_op:
        batch_op.alter_column("actor_id", new_column_name="api_key_id", existing_type=sa.String(length=32))

    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_conversations_actor_id"))
        batch_op.alter_column("actor_id", new_column_name="api_key_id", existing_type=sa.String(length=32))
    with op.batch_alter_table("conversations", schema=None) as batch_op:
        batch_op.create_index("ix_conversations_api_key_id", ["api_key_id"], unique=False)

    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_tenant_id"))
    op.drop_table("users")
