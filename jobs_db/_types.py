"""Column types shared by the tables and the migrations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import DateTime
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored in UTC and always read back as a timezone-aware UTC ``datetime``.

    PostgreSQL keeps ``timestamptz``; SQLite keeps naive UTC text, which sorts chronologically.
    Naive datetimes are refused: the database cannot guess their timezone.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if not isinstance(value, datetime):
            raise TypeError(f"expected a datetime, got {type(value).__name__}: {value!r}")
        if value.tzinfo is None:
            raise ValueError(
                f"naive datetime {value.isoformat()} has no timezone; "
                "pass an aware one, e.g. datetime.fromtimestamp(seconds, UTC)"
            )
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)
