"""Opening a database at the right schema: alembic migrations run in-process, one process at
a time."""

from __future__ import annotations

import functools
import os
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout
from sqlalchemy import Connection, Engine, inspect, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from jobs_db._database import IMMEDIATE, Database, make_engine, mask_url, parse_url, sqlite_path
from jobs_db.errors import (
    DatabaseDamagedError,
    DatabaseFileEmptyError,
    DatabaseUnavailableError,
    SchemaError,
    SchemaOutdatedError,
    SchemaTooNewError,
)

LOCK_TIMEOUT_SECONDS = 300
_PG_LOCK_KEY = 0x6A6F62735F6462  # names the PostgreSQL advisory lock that serialises upgrades
# SQLite result codes (https://sqlite.org/rescode.html) that say what is wrong with a file.
_SQLITE_DAMAGED = {11, 26}  # SQLITE_CORRUPT, SQLITE_NOTADB
_SQLITE_CANTOPEN = 14
_SQLITE_READONLY = 8
_MIGRATIONS = Path(__file__).parent / "migrations"
_REVISION_LINE = re.compile(r'^(down_revision|revision) = (?:"(\w+)"|None)$', re.MULTILINE)


@functools.cache
def known_revisions() -> tuple[str, ...]:
    """Every schema revision this code knows, oldest first, from the scripts' `revision` and
    `down_revision` lines (read as text: opening a database does not import alembic)."""
    parent_of: dict[str | None, str] = {}
    for script in (_MIGRATIONS / "versions").glob("[0-9]*.py"):
        found = dict(_REVISION_LINE.findall(script.read_text()))
        parent_of[found["down_revision"] or None] = found["revision"]
    chain: list[str] = []
    while (child := parent_of.get(chain[-1] if chain else None)) is not None:
        chain.append(child)
    return tuple(chain)


def head_revision() -> str:
    return known_revisions()[-1]


def _revision_on(connection: Connection) -> str | None:
    """The revision alembic recorded in the database (None: no schema yet)."""
    if not inspect(connection).has_table("alembic_version"):
        return None
    rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return rows[0][0] if rows else None


def _refuse_unknown(revision: str | None, url: URL) -> None:
    if revision is not None and revision not in known_revisions():
        raise SchemaTooNewError(
            f"the database at {mask_url(url)} has schema revision {revision!r}, newer than this "
            f"code knows (newest {head_revision()!r}); upgrade labmgr to use it"
        )


def unavailable(url: URL, exc: BaseException) -> DatabaseUnavailableError:
    """An error saying the database at ``url`` cannot be used, with the driver's reason."""
    original = getattr(exc, "orig", None) or exc
    reason = str(original).strip().splitlines()[0]
    if url.password:
        reason = reason.replace(str(url.password), "***")
    path = sqlite_path(url)
    code = getattr(original, "sqlite_errorcode", None)
    if path is not None and isinstance(original, sqlite3.Error):
        if code in _SQLITE_DAMAGED:
            return DatabaseDamagedError(
                f"the database file {path} is damaged or is not a SQLite database ({reason})", path
            )
        if code == _SQLITE_CANTOPEN:
            return DatabaseUnavailableError(
                f"cannot open or create the database file {path} ({reason}); check that "
                f"{path.parent} is a folder you can write to"
            )
        if code == _SQLITE_READONLY:
            return DatabaseUnavailableError(
                f"the database file {path} is read-only ({reason}); check the permissions of "
                f"the file and of {path.parent}"
            )
    if isinstance(original, sqlite3.Error) and code == _SQLITE_READONLY:  # e.g. a mode=ro URI
        return DatabaseUnavailableError(f"the database at {mask_url(url)} is read-only ({reason})")
    return DatabaseUnavailableError(f"cannot open the database at {mask_url(url)}: {reason}")


def refuse_empty_file(url: URL) -> None:
    path = sqlite_path(url)
    if path is not None and path.is_file() and path.stat().st_size == 0:
        raise DatabaseFileEmptyError(
            f"the database file {path} is empty (0 bytes): it holds no schema and no rows", path
        )


def _read_revision(engine: Engine, url: URL) -> str | None:
    try:
        with engine.connect() as connection:
            return _revision_on(connection)
    except DBAPIError as exc:
        raise unavailable(url, exc) from exc


def check_revision(engine: Engine, url: URL) -> str:
    """The database's revision; raises unless it is exactly this code's head."""
    revision = _read_revision(engine, url)
    _refuse_unknown(revision, url)
    head = head_revision()
    if revision != head:
        state = "has no jobs_db schema" if revision is None else f"is at revision {revision!r}"
        raise SchemaOutdatedError(
            f"the database at {mask_url(url)} {state}, this code needs {head!r}; "
            "open it with upgrade=True or run `labmgr db upgrade`"
        )
    return revision


@contextmanager
def _upgrade_lock(url: URL) -> Iterator[None]:
    path = sqlite_path(url)
    if path is None:  # PostgreSQL locks inside the transaction; in-memory SQLite is private
        yield
        return
    lock = FileLock(f"{path}.lock", timeout=LOCK_TIMEOUT_SECONDS)
    try:
        lock.acquire()
    except Timeout:
        raise DatabaseUnavailableError(
            f"another process has held {path}.lock for {LOCK_TIMEOUT_SECONDS} s while "
            f"upgrading {mask_url(url)}; if none is running, delete the lock file"
        ) from None
    except OSError as exc:
        raise DatabaseUnavailableError(
            f"cannot create the lock file {path}.lock ({exc.strerror or exc}); check that "
            f"{path.parent} is a folder you can write to"
        ) from None
    try:
        yield
    finally:
        lock.release()


def upgrade_engine(
    engine: Engine, url: URL, to: str = "head", *, allow_empty_file: bool = True
) -> str:
    """Bring the database to revision ``to`` (creating it if empty); return that revision. The
    empty-file check runs under the lock, so a file being created is never taken for empty."""
    target = head_revision() if to == "head" else to
    if target not in known_revisions():
        raise SchemaError(f"unknown schema revision {to!r}; known: {', '.join(known_revisions())}")
    try:
        with _upgrade_lock(url):
            if not allow_empty_file:
                refuse_empty_file(url)
            _migrate(engine, url, target)
    except DBAPIError as exc:
        raise unavailable(url, exc) from exc
    return target


def _migrate(engine: Engine, url: URL, target: str) -> None:
    with engine.execution_options(**{IMMEDIATE: True}).begin() as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        revision = _revision_on(conn)
        _refuse_unknown(revision, url)
        order = known_revisions()
        if revision is None or order.index(revision) < order.index(target):
            from alembic import command  # alembic is imported only to migrate
            from alembic.config import Config

            config = Config()
            config.set_main_option("script_location", str(_MIGRATIONS))
            config.attributes["connection"] = conn
            command.upgrade(config, target)


def upgrade(url: str | os.PathLike[str], to: str = "head") -> str:
    """Upgrade the database at ``url`` to revision ``to`` (``labmgr db upgrade``); return it."""
    parsed = parse_url(url)
    engine = make_engine(parsed)
    try:
        return upgrade_engine(engine, parsed, to)
    finally:
        engine.dispose()


def current_revision(url: str | os.PathLike[str]) -> str | None:
    """The schema revision of the database at ``url``, or None when it has no jobs_db schema
    (a missing or empty SQLite file is left as it is)."""
    parsed = parse_url(url)
    path = sqlite_path(parsed)
    if path is not None and (not path.exists() or (path.is_file() and path.stat().st_size == 0)):
        return None
    engine = make_engine(parsed)
    try:
        return _read_revision(engine, parsed)
    finally:
        engine.dispose()


def check_writable(db: Database) -> None:
    """Raise `DatabaseUnavailableError` unless ``db`` takes writes (checked with a write that
    changes nothing), so a caller can refuse before it spends anything it must record."""
    try:
        with db.session() as session:
            session.execute(text("UPDATE alembic_version SET version_num = version_num"))
    except DBAPIError as exc:
        raise unavailable(db._url, exc) from exc


def open_database(
    url: str | os.PathLike[str] | None = None,
    *,
    upgrade: bool = True,
    allow_empty_file: bool = True,
) -> Database:
    """Open the jobs database at a SQLAlchemy URL, a SQLite file path, or None (in memory).

    A SQLite file is created if missing (its folder must exist). ``upgrade=True`` migrates an
    empty or older database first, ``upgrade=False`` raises `SchemaOutdatedError`; a newer
    schema raises `SchemaTooNewError`; ``allow_empty_file=False`` refuses a zero-byte file.
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
