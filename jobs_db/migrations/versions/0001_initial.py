"""Initial schema: training files, fine-tuning jobs, job tags, models.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None

TIME = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "training_files",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=True),
        sa.Column("project_id", sa.String(), nullable=True),
        sa.Column("key_env", sa.String(), nullable=True),
        sa.Column("endpoint", sa.String(), nullable=True),
        sa.Column("local_path", sa.String(), nullable=True),
        sa.Column("filename", sa.String(), nullable=True),
        sa.Column("md5", sa.String(), nullable=True),
        sa.Column("size_bytes", sa.Integer(), nullable=True),
        sa.Column("num_examples", sa.Integer(), nullable=True),
        sa.Column("purpose", sa.String(), nullable=True),
        sa.Column("created_at", TIME, nullable=True),
        sa.Column("uploaded_at", TIME, nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_training_files_md5_owner", "training_files", ["md5", "organization_id", "project_id"]
    )
    op.create_table(
        "finetune_jobs",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=True),
        sa.Column("project_id", sa.String(), nullable=True),
        sa.Column("key_env", sa.String(), nullable=True),
        sa.Column("endpoint", sa.String(), nullable=True),
        sa.Column("base_model", sa.String(), nullable=True),
        sa.Column("resolved_base_model", sa.String(), nullable=True),
        sa.Column("suffix", sa.String(), nullable=True),
        sa.Column("training_file_id", sa.String(), nullable=True),
        sa.Column("validation_file_id", sa.String(), nullable=True),
        sa.Column("method", sa.String(), nullable=True),
        sa.Column("hyperparameters_requested", sa.JSON(), nullable=True),
        sa.Column("hyperparameters_actual", sa.JSON(), nullable=True),
        sa.Column("seed_requested", sa.Integer(), nullable=True),
        sa.Column("seed", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("error_code", sa.String(), nullable=True),
        sa.Column("error_message", sa.String(), nullable=True),
        sa.Column("error_param", sa.String(), nullable=True),
        sa.Column("estimated_finish", TIME, nullable=True),
        sa.Column("phase", sa.String(), nullable=True),
        sa.Column("trained_tokens", sa.Integer(), nullable=True),
        sa.Column("fine_tuned_model", sa.String(), nullable=True),
        sa.Column("created_at", TIME, nullable=True),
        sa.Column("finished_at", TIME, nullable=True),
        sa.Column("refreshed_at", TIME, nullable=True),
        sa.Column("api_metadata", sa.JSON(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_finetune_jobs_owner", "finetune_jobs", ["organization_id", "project_id"])
    for column in ("base_model", "suffix", "status", "created_at"):
        op.create_index(f"ix_finetune_jobs_{column}", "finetune_jobs", [column])
    op.create_table(
        "job_tags",
        sa.Column("job_id", sa.String(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("value", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["finetune_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("job_id", "key"),
    )
    op.create_index("ix_job_tags_key_value", "job_tags", ["key", "value"])
    op.create_table(
        "models",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("job_id", sa.String(), nullable=True),
        sa.Column("base_model", sa.String(), nullable=True),
        sa.Column("suffix", sa.String(), nullable=True),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("epoch", sa.Integer(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=True),
        sa.Column("organization_id", sa.String(), nullable=True),
        sa.Column("project_id", sa.String(), nullable=True),
        sa.Column("created_at", TIME, nullable=True),
        sa.CheckConstraint("kind IN ('final', 'checkpoint', 'base')", name="ck_models_kind"),
        sa.CheckConstraint("kind != 'checkpoint' OR step IS NOT NULL", name="ck_models_step"),
        sa.ForeignKeyConstraint(["job_id"], ["finetune_jobs.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("name"),
    )
    for column in ("job_id", "base_model", "suffix", "kind", "created_at"):
        op.create_index(f"ix_models_{column}", "models", [column])
