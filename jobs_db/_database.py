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
    """An open jobs database (see :func:`open_database`); close it when done.

    Every query and write takes a ``Database`` (each call its own transaction) or a
    ``Session`` from :meth:`session` (calls share one transaction).
    """

    def __init__(self, engine: Engine, url: URL) -> None:
        self.engine = engine
        self._url = url
        self._writer = engine.execution_options(**{IMMEDIATE: True})

    @property
    def url(self) -> str:
        """The database URL with its password masked, safe to print."""
        return mask_url(self._url)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self, *, write: bool = True) -> Iterator[Session]:
        """One transaction, committed at the end of the block, rolled back on error.

        ``write=True`` takes SQLite's write lock at the start, so concurrent writers queue
        instead of failing. Objects stay usable after the block.
        """
        with Session(self._writer if write else self.engine, expire_on_commit=False) as session:
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def close(self) -> None:
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
    """Open the jobs database at a SQLAlchemy URL, a SQLite file path, or None (in memory).

    A SQLite file is created if missing (its folder must exist). ``upgrade=True`` migrates an
    empty or older database first (safe from several processes at once); ``upgrade=False``
    raises `SchemaOutdatedError` instead. A newer schema raises `SchemaTooNewError`.
    ``allow_empty_file=False`` refuses a zero-byte SQLite file (`DatabaseFileEmptyError`).
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
