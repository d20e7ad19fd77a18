"""Errors raised by jobs_db; each message names the database, record or field at fault.

DatabaseError
├── DatabaseUnavailableError      cannot be opened: missing folder, server down, no driver
│   ├── DatabaseDamagedError      a SQLite file that is not a database, or is corrupt
│   └── DatabaseFileEmptyError    a zero-byte SQLite file where a database was expected
├── SchemaError                   the schema does not match this code
│   ├── SchemaTooNewError
│   └── SchemaOutdatedError
└── DatabaseInputError (ValueError)   an unusable value handed to a function
    └── UnknownJobError (LookupError)
"""

from __future__ import annotations

from pathlib import Path


class DatabaseError(Exception):
    """Base class of every error jobs_db raises on purpose."""


class DatabaseUnavailableError(DatabaseError):
    """The database cannot be opened (missing folder, server down, bad credentials, no driver)."""


class DatabaseDamagedError(DatabaseUnavailableError):
    """The SQLite file is not a database (another kind of file) or its contents are corrupt."""

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path
        """The damaged file."""


class DatabaseFileEmptyError(DatabaseUnavailableError):
    """The SQLite file exists but holds zero bytes, so it holds no schema and no rows.

    jobs_db never leaves such a file behind (it writes the header as it creates a file), so
    it was truncated or made by something else; :func:`open_database` refuses it when asked
    to (``empty_file="refuse"``) rather than silently starting a new database in it.
    """

    def __init__(self, message: str, path: Path) -> None:
        super().__init__(message)
        self.path = path
        """The empty file."""


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
