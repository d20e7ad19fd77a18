"""Alembic migration scripts of the jobs database, run by ``jobs_db.upgrade``."""
