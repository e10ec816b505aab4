"""sentence vectors of each chunk

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-08 01:20:00

``chunks.sentence_vectors``: the embeddings of a chunk's sentences (``retrieval.sentences.chunk_sentences``), float16,
one row of the embedder's dimension per sentence, written at ingestion. The retriever scores a dense candidate with
its best sentence as well as its own vector (``retrieval.sentence_weight``). Chunks ingested before 0008 have none
and are scored by their vector alone until they are re-ingested. Downgrading drops them.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("chunks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("sentence_vectors", sa.LargeBinary(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("chunks", schema=None) as batch_op:
        batch_op.drop_column("sentence_vectors")
