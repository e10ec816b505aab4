"""knowledge graph tables for the PostgreSQL graph store

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-01 00:10:00

With ``index.graph_backend=postgres`` (distributed mode) each tenant's knowledge graph lives in these tables instead
of pickles on a shared volume: ``graph_nodes`` (entity, chunk, document and section nodes; chunk nodes carry the
filter fields, entity nodes their mention count), ``graph_edges`` (every edge tagged with the document that
contributed it) and ``graph_tokens`` (content word -> entity keys, for partial linking). Embedded mode creates them
too and leaves them empty. Downgrading drops the graphs; re-index to rebuild them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "graph_nodes",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=1024), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("document_id", sa.String(length=64), nullable=True),
        sa.Column("mentions", sa.Integer(), nullable=False),
        sa.Column("acl_groups", sa.JSON(), nullable=True),
        sa.Column("doc_type", sa.String(length=128), nullable=True),
        sa.Column("tags", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "node_id"),
    )
    op.create_index("ix_graph_nodes_document", "graph_nodes", ["document_id"], unique=False)
    op.create_table(
        "graph_edges",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("document_id", sa.String(length=64), nullable=False),
        sa.Column("src", sa.String(length=1024), nullable=False),
        sa.Column("dst", sa.String(length=1024), nullable=False),
        sa.Column("kind", sa.String(length=1), nullable=False),
        sa.Column("weight", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "document_id", "src", "dst"),
    )
    op.create_index("ix_graph_edges_tenant_dst", "graph_edges", ["tenant_id", "dst", "kind"], unique=False)
    op.create_index("ix_graph_edges_tenant_src", "graph_edges", ["tenant_id", "src", "kind"], unique=False)
    op.create_table(
        "graph_tokens",
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("token", sa.String(length=256), nullable=False),
        sa.Column("entity", sa.String(length=1024), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "token", "entity"),
    )


def downgrade() -> None:
    op.drop_table("graph_tokens")
    op.drop_index("ix_graph_edges_tenant_src", table_name="graph_edges")
    op.drop_index("ix_graph_edges_tenant_dst", table_name="graph_edges")
    op.drop_table("graph_edges")
    op.drop_index("ix_graph_nodes_document", table_name="graph_nodes")
    op.drop_table("graph_nodes")
