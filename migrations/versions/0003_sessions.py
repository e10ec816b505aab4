"""server-side browser sessions

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30 21:00:00

Until 0002 a session was a signed cookie, valid until it expired whatever happened in between. From 0003 the cookie
carries a random token and this table holds its sha256 with the principal, so logout, a password change or reset,
disabling a user, revoking a key and "sign out everywhere" end sessions at once. Existing cookies stop working (their
holders log in again).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("principal_kind", sa.String(length=8), nullable=False),
        sa.Column("principal_id", sa.String(length=32), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_seen_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_sessions_tenant_id"), ["tenant_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_sessions_principal_id"), ["principal_id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("sessions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_sessions_principal_id"))
        batch_op.drop_index(batch_op.f("ix_sessions_tenant_id"))
    op.drop_table("sessions")
