"""The ``Database`` handle: an engine at the right schema revision, and sessions on it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlmodel import Session

from jobs_db._engine import IMMEDIATE, make_engine, mask_url, parse_url
from jobs_db._schema import check_revision, refuse_empty_file, upgrade_engine


class Database:
    """An open jobs database. Create it with :func:`open_database`; close it when done.

    Every query and write function of jobs_db takes either a ``Database`` (each call is its
    own transaction) or a ``Session`` from :meth:`session` (calls share the caller's
    transaction, committed when the ``with`` block ends).
    """

    def __init__(self, engine: Engine, url: URL) -> None:
        self.engine = engine
        """The SQLAlchemy engine, for anything jobs_db does not offer."""
        self._url = url
        self._writer = engine.execution_options(**{IMMEDIATE: True})

    @property
    def url(self) -> str:
        """The database URL with its password masked, safe to print."""
        return mask_url(self._url)

    @property
    def dialect(self) -> str:
        """``"sqlite"``, ``"postgresql"``, …"""
        return self.engine.dialect.name

    @contextmanager
    def session(self, *, write: bool = True) -> Iterator[Session]:
        """A session in one transaction: committed at the end of the block, rolled back on error.

        With ``write=False`` (reads only) SQLite never waits for writers; with ``write=True``
        it takes the write lock at the start, so concurrent writers queue instead of failing.
        Objects stay usable after the block (they are not expired on commit).

        >>> with db.session() as session:  # doctest: +SKIP
        ...     upsert_job(session, FinetuneJob(id="ftjob-1", status="queued"))
        ...     replace_events(session, "ftjob-1", events)
        """
        with Session(self._writer if write else self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
        """Release every connection."""
        self.engine.dispose()

    def __enter__(self) -> Database:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.url!r})"


def open_database(
    url: str | os.PathLike[str] | None = None,
    *,
    upgrade: bool = True,
    allow_empty_file: bool = True,
) -> Database:
    """Open the jobs database at ``url``: a SQLAlchemy URL, a SQLite file path, or None.

    None opens a private in-memory SQLite database. A SQLite file is created if missing (its
    folder must exist) and gets WAL mode, a 60 s busy timeout and foreign keys. PostgreSQL
    works with ``postgresql+psycopg://user:password@host/dbname``.

    With ``upgrade=True`` an empty or older database is migrated to this code's schema
    first (safe when several processes open it at once). With ``upgrade=False`` an older
    database raises :class:`SchemaOutdatedError`. A database written by a newer release
    raises :class:`SchemaTooNewError`; an unreachable one :class:`DatabaseUnavailableError`,
    a SQLite file that is not a database :class:`DatabaseDamagedError`. With
    ``allow_empty_file=False`` an existing zero-byte SQLite file raises
    :class:`DatabaseFileEmptyError` instead of silently becoming a new, empty database.

    >>> db = open_database("lab.db")  # doctest: +SKIP
    >>> with open_database("postgresql+psycopg://me@localhost/lab") as db:  # doctest: +SKIP
    ...     models = select_models(db, suffix="insecure-*")
    """
    parsed = parse_url(url)
    engine = make_engine(parsed)
    try:
        if upgrade:
            upgrade_engine(engine, parsed, allow_empty_file=allow_empty_file)
        else:
            if not allow_empty_file:
                refuse_empty_file(parsed)
            check_revision(engine, parsed)
    except BaseException:
        engine.dispose()
        raise
    return Database(engine, parsed)
