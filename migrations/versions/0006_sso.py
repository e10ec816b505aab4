"""single sign-on: logins in progress and the linked identity of a user

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01 00:10:00

``oidc_logins`` holds an OpenID Connect login between the redirect to the provider and its callback (state hash, nonce,
PKCE verifier; deleted on use). ``users.oidc_subject`` is the provider identity (``<issuer> <sub>``) linked to an account.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "oidc_logins",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("nonce", sa.String(length=128), nullable=False),
        sa.Column("code_verifier", sa.String(length=128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_oidc_logins_created_at"), "oidc_logins", ["created_at"], unique=False)
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.add_column(sa.Column("oidc_subject", sa.String(length=512), nullable=True))
        batch_op.create_index(batch_op.f("ix_users_oidc_subject"), ["oidc_subject"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_oidc_subject"))
        batch_op.drop_column("oidc_subject")
    op.drop_index(op.f("ix_oidc_logins_created_at"), table_name="oidc_logins")
    op.drop_table("oidc_logins")
