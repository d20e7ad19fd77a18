"""How every read and write reaches a session, and a portable race-safe insert-or-update."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from jobs_db._database import Database
from jobs_db.errors import DatabaseInputError

Target = Database | Session
"""Where a call runs: a ``Database`` (its own transaction) or a caller's ``Session``."""

_NATIVE_UPSERT = {"sqlite": sqlite_insert, "postgresql": postgresql_insert}
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
    """Update the row with primary ``key`` to ``values``, or insert it; True if written.

    ``on_insert`` values are only used for a new row. With ``unless_newer="refreshed_at"`` a
    row refreshed later than the new value is left alone (False). Safe against a concurrent
    insert of the same key. One ``INSERT … ON CONFLICT`` when the row has every required
    column; otherwise UPDATE, INSERT in a savepoint, and UPDATE again if another writer won.
    """
    row = {**(on_insert or {}), **values, **key}
    if unless_newer is not None and values.get(unless_newer) is None:
        unless_newer = None
    dialect = session.get_bind().dialect.name
    # INSERT … ON CONFLICT checks NOT NULL on the proposed row before seeing the conflict,
    # so an update that leaves out a required column (a job's status) takes the other path.
    if dialect not in _NATIVE_UPSERT or not _required(table) <= row.keys():
        return _insert_or_update_portably(session, table, key, values, row, unless_newer)
    statement = _upsert_statement(dialect, table, tuple(key), tuple(values), unless_newer)
    try:
        # RETURNING yields the row only if it was inserted or updated (rowcount is not
        # reliable for upserts on every driver).
        written = session.execute(statement, row).first() is not None
    except IntegrityError as exc:
        raise _unusable(table, key, exc) from None
    return written or not values


def _unusable(table: Table, key: Mapping[str, Any], exc: IntegrityError) -> DatabaseInputError:
    return DatabaseInputError(f"cannot record {table.name} row {dict(key)}: {exc.orig}")


@functools.cache
def _required(table: Table) -> frozenset[str]:
    return frozenset(
        column.name
        for column in table.columns
        if not column.nullable and column.default is None and column.server_default is None
    )


@functools.lru_cache(maxsize=256)
def _upsert_statement(
    dialect: str,
    table: Table,
    key: tuple[str, ...],
    updated: tuple[str, ...],
    unless_newer: str | None,
) -> Any:
    statement: Any = _NATIVE_UPSERT[dialect](table)
    if not updated:
        statement = statement.on_conflict_do_nothing(index_elements=list(key))
    else:
        guard = None
        if unless_newer is not None:
            stored = table.c[unless_newer]
            guard = or_(stored.is_(None), stored <= statement.excluded[unless_newer])
        statement = statement.on_conflict_do_update(
            index_elements=list(key),
            set_={name: statement.excluded[name] for name in updated},
            where=guard,
        )
    return statement.returning(*table.primary_key.columns)


def _insert_or_update_portably(
    session: Session,
    table: Table,
    key: Mapping[str, Any],
    values: Mapping[str, Any],
    row: Mapping[str, Any],
    unless_newer: str | None,
) -> bool:
    match = [table.c[name] == value for name, value in key.items()]
    statement = update(table).where(*match).values(dict(values))
    if unless_newer is not None:
        stored = table.c[unless_newer]
        statement = statement.where(or_(stored.is_(None), stored <= values[unless_newer]))
    if values and session.execute(statement).rowcount:  # type: ignore[attr-defined]
        return True
    try:
        with session.begin_nested():
            session.execute(insert(table).values(dict(row)))
        return True
    except IntegrityError as exc:
        exists = session.execute(select(*table.primary_key.columns).where(*match)).first()
        if exists is None:
            raise _unusable(table, key, exc) from None
        if not values:
            return True  # the row exists and there was nothing to change
        return bool(session.execute(statement).rowcount)  # type: ignore[attr-defined]
