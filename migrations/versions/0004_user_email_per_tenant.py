"""user e-mail addresses unique per tenant, not across tenants

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-30 21:10:00

With e-mail addresses unique across tenants, an administrator creating a user learned through the 409 that an address
was taken in some other tenant. From 0004 the constraint is (tenant_id, email); login looks the address up in every
tenant and takes the account whose password matches. Downgrading fails if an address is then used in two tenants.
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

# 0002 created the constraint without a name: PostgreSQL called it users_email_key; SQLite keeps no name, so the
# batch copy gives it this one through a naming convention.
_CONVENTION = {"uq": "uq_%(table_name)s_%(column_0_name)s"}


def _old_name() -> str:
    return "users_email_key" if op.get_bind().dialect.name == "postgresql" else "uq_users_email"


def upgrade() -> None:
    with op.batch_alter_table("users", schema=None, naming_convention=_CONVENTION) as batch_op:
        batch_op.drop_constraint(_old_name(), type_="unique")
        batch_op.create_unique_constraint("uq_users_tenant_email", ["tenant_id", "email"])
        batch_op.create_index(batch_op.f("ix_users_email"), ["email"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("users", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_users_email"))
        batch_op.drop_constraint("uq_users_tenant_email", type_="unique")
        batch_op.create_unique_constraint(_old_name(), ["email"])
