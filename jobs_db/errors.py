"""Errors raised by jobs_db; each message names the database, record or field at fault."""

from __future__ import annotations


class DatabaseError(Exception):
    """Base class of every error jobs_db raises on purpose."""


class DatabaseUnavailableError(DatabaseError):
    """The database cannot be opened (missing folder, server down, bad credentials, no driver)."""


class SchemaError(DatabaseError):
    """The database schema does not match this version of the code."""


class SchemaTooNewError(SchemaError):
    """The database was upgraded by a newer release; this code does not know its schema."""


class SchemaOutdatedError(SchemaError):
    """The database is behind this code's schema and was opened with ``upgrade=False``."""


class DatabaseInputError(DatabaseError, ValueError):
    """A value handed to a jobs_db function is unusable (bad tag, missing field, unknown job)."""


class UnknownJobError(DatabaseInputError, LookupError):
    """A write refers to a fine-tuning job the database does not hold."""

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"fine-tuning job {job_id!r} is not in the database; record it with upsert_job first"
        )
        self.job_id = job_id
