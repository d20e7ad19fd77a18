"""Jobs queued through the daily limit, training curves, integrations, deleted models.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    with op.batch_alter_table("finetune_jobs") as batch:
        batch.add_column(sa.Column("create_request", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("integrations", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("result_file_id", sa.String(), nullable=True))
        batch.add_column(sa.Column("not_before", TIME, nullable=True))
        batch.add_column(sa.Column("claimed_by", sa.String(), nullable=True))
        batch.add_column(sa.Column("claimed_until", TIME, nullable=True))
        batch.add_column(sa.Column("submit_attempts", sa.Integer(), nullable=True))
    with op.batch_alter_table("models") as batch:
        batch.add_column(sa.Column("deleted_at", TIME, nullable=True))
    op.create_table(
        "training_curves",
        sa.Column("job_id", sa.String(), nullable=False),
        sa.Column("file_id", sa.String(), nullable=False),
        sa.Column("header", sa.JSON(), nullable=False),
        sa.Column("rows", sa.JSON(), nullable=False),
        sa.Column("downloaded_at", TIME, nullable=True),
        sa.ForeignKeyConstraint(["job_id"], ["finetune_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id"),
    )
