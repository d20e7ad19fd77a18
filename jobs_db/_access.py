"""How every read and write reaches a session, and a race-safe insert-or-update."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy import Table, insert, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, SQLModel

from jobs_db._database import Database
from jobs_db.errors import DatabaseInputError

Target = Database | Session
"""Where a call runs: a ``Database`` (its own transaction) or a caller's ``Session``."""

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
