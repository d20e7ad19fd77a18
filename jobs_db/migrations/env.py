"""Alembic environment: migrations always run on a connection handed over by jobs_db."""

from alembic import context

from jobs_db._tables import TableBase

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("jobs_db migrations run through jobs_db.upgrade(url), not the alembic CLI")
context.configure(
    connection=connection,
    target_metadata=TableBase.metadata,
    render_as_batch=True,  # SQLite can only change a table by copying it
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
