"""A PostgreSQL URL as libpq wants it, and as people may see it."""

from __future__ import annotations

from typing import Any

__all__ = ["conninfo_of"]


def conninfo_of(url: str) -> tuple[str, str]:
    """A libpq connection string for a SQLAlchemy `postgresql[+driver]://` URL, and the URL
    with its password masked (for messages)."""
    from psycopg.conninfo import make_conninfo
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    options: dict[str, Any] = {
        "host": parsed.host,
        "port": parsed.port,
        "user": parsed.username,
        "password": parsed.password,
        "dbname": parsed.database,
    }
    for name, value in parsed.query.items():
        options[name] = value if isinstance(value, str) else value[-1]
    given = {name: value for name, value in options.items() if value is not None}
    return make_conninfo("", **given), parsed.render_as_string(hide_password=True)
