"""The ``Database`` handle and its engine, how every read and write reaches a session, and a
race-safe insert-or-update."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, Table, create_engine, event, insert, or_, select, update
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, NoSuchModuleError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel

from jobs_db.errors import DatabaseInputError, DatabaseUnavailableError

BUSY_TIMEOUT_SECONDS = 60
IMMEDIATE = "jobs_db_begin_immediate"
"""Execution option: on SQLite, writers start with ``BEGIN IMMEDIATE``."""
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def parse_url(url: str | os.PathLike[str] | None) -> URL:
    """A SQLAlchemy URL from a URL string, a SQLite file path, or None (in-memory SQLite)."""
    if url is None:
        return make_url("sqlite://")
    text = os.fspath(url)
    if "://" not in text:
        return make_url("sqlite:///" + str(Path(text).expanduser().absolute()))
    try:
        return make_url(text)
    except ArgumentError as exc:
        raise DatabaseUnavailableError(
            f"{text.split('://', 1)[0]}://… is not a database URL ({exc}); use a file path or "
            "a SQLAlchemy URL such as sqlite:///lab.db or postgresql+psycopg://user@host/db"
        ) from None


def mask_url(url: URL) -> str:
    """The URL as text with its password replaced by ``***``."""
    return url.render_as_string(hide_password=True)


def database_file(url: str | os.PathLike[str]) -> Path | None:
    """The SQLite file a URL or path names, or None (another database, or in-memory SQLite)."""
    return sqlite_path(parse_url(url))


def sqlite_path(url: URL) -> Path | None:
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return Path(database)


def make_engine(url: URL) -> Engine:
    """An engine for ``url``; SQLite gets WAL, a busy timeout, foreign keys and real BEGINs."""
    shown = mask_url(url)
    if url.get_backend_name() != "sqlite":
        try:
            return create_engine(url, pool_pre_ping=True)
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            hint = " (pip install 'labmgr[postgres]')" if "postgres" in url.drivername else ""
            raise DatabaseUnavailableError(
                f"cannot open the database at {shown}: unknown database kind "
                f"{url.drivername!r} or its driver is not installed{hint} ({exc})"
            ) from None
    path = sqlite_path(url)
    if path is not None:
        problem = _unusable_file(path)
        if problem:
            raise DatabaseUnavailableError(f"cannot open the database at {shown}: {problem}")
    kwargs: dict[str, Any] = {"connect_args": {"timeout": BUSY_TIMEOUT_SECONDS}}
    if path is None:
        kwargs["poolclass"] = StaticPool  # one shared connection: in-memory data survives
        kwargs["connect_args"]["check_same_thread"] = False
    engine = create_engine(url, **kwargs)
    _configure_sqlite(engine, in_memory=path is None)
    return engine


def _unusable_file(path: Path) -> str | None:
    if path.is_dir():
        return f"{path} is a folder, not a database file"
    existing = next((folder for folder in path.parents if folder.exists()), None)
    if existing is not None and not existing.is_dir():
        return f"{existing} is a file, not a folder"
    if existing != path.parent:
        return f"folder {path.parent} does not exist"
    return None


def _configure_sqlite(engine: Engine, *, in_memory: bool) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy, not the driver, decide when a transaction begins (see _on_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_SECONDS * 1000}")
        cursor.execute("PRAGMA foreign_keys = ON")
        if not in_memory:
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A writer takes the write lock up front, so it waits (busy timeout) instead of
        # failing with "database is locked" when it later upgrades a read lock.
        immediate = connection.get_execution_options().get(IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


class Database:
    """An open jobs database (see :func:`open_database`); close it when done. Every query and
    write takes one (each call its own transaction) or a ``Session`` from :meth:`session`."""

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
        """One transaction, committed at the end of the block, rolled back on error; objects
        stay usable after it. ``write=True`` takes SQLite's write lock at the start, so
        concurrent writers queue instead of failing."""
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

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Database({self.url!r})"


Target = Database | Session
"""Where a call runs: a ``Database`` (its own transaction) or a caller's ``Session``."""


@contextmanager
def using(target: Target, *, write: bool) -> Iterator[Session]:
    if isinstance(target, Session):
        yield target
    elif isinstance(target, Database):
        with target.session(write=write) as session:
            yield session
    else:
        raise TypeError(f"expected a jobs_db Database or Session, got {type(target).__name__}")


def table_of(model: type[SQLModel]) -> Table:
    return model.__table__  # type: ignore[attr-defined]


def set_columns(record: SQLModel) -> dict[str, Any]:
    """The column values the caller set explicitly on ``record`` (unset fields are left out)."""
    columns = table_of(type(record)).c
    values = {name: getattr(record, name) for name in record.model_fields_set if name in columns}
    key_env = values.get("key_env")
    if key_env is not None and not (isinstance(key_env, str) and _ENV_NAME.fullmatch(key_env)):
        # Never echo the value: a key pasted here by mistake must not reach a log.
        raise DatabaseInputError(
            f"{type(record).__name__}.key_env must be the *name* of an environment variable "
            "(e.g. OPENAI_API_KEY_LAB), not a key or other text"
        )
    refuse_naive_times(type(record).__name__, values)
    return values


def refuse_naive_times(label: str, values: Mapping[str, Any]) -> None:
    """Raise if a datetime among ``values`` has no timezone (the database cannot guess it)."""
    for name, value in values.items():
        if isinstance(value, datetime) and value.tzinfo is None:
            raise DatabaseInputError(
                f"{label}.{name}: naive datetime {value.isoformat()} has no timezone; "
                "pass an aware one, e.g. datetime.fromtimestamp(seconds, UTC)"
            )


def insert_or_update(
    session: Session,
    table: Table,
    key: Mapping[str, Any],
    values: Mapping[str, Any],
    *,
    on_insert: Mapping[str, Any] | None = None,
    unless_newer: str | None = None,
) -> bool:
    """Update the row with primary ``key`` to ``values``, or insert it (with ``on_insert``
    too); True if written. With ``unless_newer="refreshed_at"`` a row refreshed later is left
    alone (False). An INSERT in a savepoint after an UPDATE that matched nothing, then the
    UPDATE again if another writer inserted first: safe on every database."""
    match = [table.c[name] == value for name, value in key.items()]
    statement = update(table).where(*match).values(dict(values))
    if unless_newer is not None and values.get(unless_newer) is not None:
        stored = table.c[unless_newer]
        statement = statement.where(or_(stored.is_(None), stored <= values[unless_newer]))
    if values and session.execute(statement).rowcount:  # type: ignore[attr-defined]
        return True
    try:
        with session.begin_nested():
            session.execute(insert(table).values({**(on_insert or {}), **values, **key}))
        return True
    except IntegrityError as exc:
        exists = session.execute(select(*table.primary_key.columns).where(*match)).first()
        if exists is None:
            raise DatabaseInputError(
                f"cannot record {table.name} row {dict(key)}: {exc.orig}"
            ) from None
        if not values:
            return True  # the row exists and there was nothing to change
        return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]
