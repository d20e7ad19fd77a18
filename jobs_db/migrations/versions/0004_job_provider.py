"""The provider that trains a job (``tinker``; NULL is OpenAI) and a worker's progress.

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"


def upgrade() -> None:
    with op.batch_alter_table("finetune_jobs") as batch:
        batch.add_column(sa.Column("provider", sa.String(), nullable=True))
        batch.add_column(sa.Column("progress", sa.JSON(), nullable=True))
