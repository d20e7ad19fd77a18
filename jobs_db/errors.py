"""Errors raised by jobs_db; each message names the database, record or field at fault.

DatabaseError
├── DatabaseUnavailableError      cannot be opened: missing folder, server down, no driver
│   ├── DatabaseDamagedError      a SQLite file that is not a database, or is corrupt
│   └── DatabaseFileEmptyError    a zero-byte SQLite file where a database was expected
├── SchemaError                   the schema does not match this code
│   ├── SchemaTooNewError         written by a newer release
│   └── SchemaOutdatedError       behind this code, opened with ``upgrade=False``
└── DatabaseInputError (ValueError)   an unusable value handed to a function
    └── UnknownJobError (LookupError)
"""

from __future__ import annotations

from pathlib import Path


class DatabaseError(Exception):
    """Base class of every error jobs_db raises on purpose."""


class DatabaseUnavailableError(DatabaseError):
    """The database cannot be opened."""


class _FileError(DatabaseUnavailableError):
    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path


class DatabaseDamagedError(_FileError):
    """The SQLite file ``path`` is not a database, or its contents are corrupt."""


class DatabaseFileEmptyError(_FileError):
    """The SQLite file ``path`` holds zero bytes, and ``allow_empty_file=False`` refuses to
    start a database in it (jobs_db never leaves one behind)."""


class SchemaError(DatabaseError):
    """The database schema does not match this version of the code."""


class SchemaTooNewError(SchemaError):
    """The database was upgraded by a newer release."""


class SchemaOutdatedError(SchemaError):
    """The database is behind this code's schema and was opened with ``upgrade=False``."""


class DatabaseInputError(DatabaseError, ValueError):
    """A value handed to a jobs_db function is unusable."""


class UnknownJobError(DatabaseInputError, LookupError):
    """A write refers to a fine-tuning job the database does not hold."""

    def __init__(self, job_id: str) -> None:
        super().__init__(
            f"fine-tuning job {job_id!r} is not in the database; record it with upsert_job first"
        )
        self.job_id = job_id
