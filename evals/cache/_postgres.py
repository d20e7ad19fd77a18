"""The cache in a PostgreSQL database through psycopg 3: tables prefixed `cache_`, one
statement per chunk of requests (never per request), leases on the server's clock."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from evals.cache._backend import CacheBackend, Item, explained
from evals.cache._samples import CachedSamples
from evals.errors import CacheError

if TYPE_CHECKING:
    import psycopg

_SCHEMA_LOCK = 0x6C61626D  # pg_advisory_xact_lock key: one maker of tables at a time
_NOW = "extract(epoch from clock_timestamp())"
_PAIRS = "unnest(%s::text[], %s::int[]) AS d(k, i)"
"""The (request key, sample index) pairs of a statement, given as two arrays."""


def conninfo_of(url: str) -> tuple[str, str]:
    """A libpq connection string for a SQLAlchemy URL, and the URL with its password masked."""
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


def _arrays(items: Sequence[Item]) -> tuple[list[str], list[int]]:
    return [key for key, _ in items], [ix for _, ix in items]


class PostgresBackend(CacheBackend):
    """The cache in the PostgreSQL database at `url` (a SQLAlchemy URL)."""

    prefix = "cache_"
    placeholder = "%s"

    def __init__(self, url: str) -> None:
        super().__init__()
        self._conninfo, self.location = conninfo_of(url)

    def driver_errors(self) -> tuple[type[Exception], ...]:
        import psycopg

        return (psycopg.Error,)

    def explain(self, action: str, error: Exception) -> CacheError:
        self.close()  # the next call connects anew
        text = " ".join(str(error).split()) or type(error).__name__
        if "password" in text.lower() or "authentication" in text.lower():
            hint = "Check the user and password of the cache URL (LABMGR_CACHE_URL or cache_url)."
        elif "does not exist" in text and "database" in text:
            hint = "Create the database first (createdb), or point the cache URL at one."
        elif "connect" in text.lower() or "connection" in text.lower():
            hint = "Is the PostgreSQL server running and reachable? Check the cache URL."
        elif "read-only" in text or "permission denied" in text:
            hint = "Give the cache URL's user write access to the cache tables."
        else:
            hint = None
        return CacheError(
            f"cannot {action} the response cache at {self.location}: {text}.", hint=hint
        )

    def _open(self) -> psycopg.Connection[Any]:
        import psycopg

        return psycopg.connect(self._conninfo, autocommit=True, connect_timeout=10)

    def transaction(self, connection: Any) -> Any:
        return connection.transaction()

    @contextmanager
    def schema_lock(self, connection: Any) -> Iterator[Any]:
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            yield connection

    def run_script(self, connection: Any, script: str) -> None:
        super().run_script(connection, script.replace(" WITHOUT ROWID", ""))

    @explained("read")
    def now(self) -> float:
        return float(self.connect().execute(f"SELECT {_NOW}").fetchone()[0])

    def _size_bytes(self, connection: Any) -> int:
        size = connection.execute(
            "SELECT COALESCE(SUM(pg_total_relation_size(c)), 0) FROM unnest(ARRAY["
            "'cache_samples', 'cache_errors', 'cache_meta', 'cache_claims'"
            "]::regclass[]) AS c"
        ).fetchone()
        return int(size[0]) if size else 0

    @explained("read")
    def read_all(self, keys: Iterable[str]) -> dict[str, CachedSamples]:
        return self._read(dict.fromkeys(keys, 2**31 - 1))

    @explained("read")
    def read_first(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        found = self._read(wanted)
        partial = [key for key, n in wanted.items() if key in found and len(found[key]) < n]
        found.update(self._read(dict.fromkeys(partial, 2**31 - 1)))
        return found

    def _read(self, wanted: Mapping[str, int]) -> dict[str, CachedSamples]:
        """For `{key: n}`, samples 0…n-1 of each, in one statement."""
        if not wanted:
            return {}
        rows = (
            self.connect()
            .execute(
                "SELECT s.request_key, s.sample_ix, s.content, s.logprobs, s.finish_reason, "
                "s.prompt_tokens, s.completion_tokens, s.reasoning_tokens "
                "FROM unnest(%s::text[], %s::int[]) "
                "AS w(request_key, n) JOIN cache_samples s ON s.request_key = w.request_key "
                "AND s.sample_ix < w.n ORDER BY s.request_key, s.sample_ix",
                (list(wanted), list(wanted.values())),
            )
            .fetchall()
        )
        return {
            key: CachedSamples([row[1:] for row in of_key])
            for key, of_key in itertools.groupby(rows, key=operator.itemgetter(0))
        }

    @explained("write to")
    def claim(self, owner: str, items: Sequence[Item], lease_seconds: float) -> set[Item]:
        connection = self.connect()
        connection.execute(f"DELETE FROM cache_claims WHERE expires < {_NOW}")
        rows = connection.execute(
            f"INSERT INTO cache_claims SELECT k, i, %s, {_NOW} + %s FROM {_PAIRS} "
            "ON CONFLICT (request_key, sample_ix) DO UPDATE SET owner = EXCLUDED.owner, "
            f"expires = EXCLUDED.expires WHERE cache_claims.expires < {_NOW} "
            "OR cache_claims.owner = EXCLUDED.owner RETURNING request_key, sample_ix",
            (owner, lease_seconds, *_arrays(items)),
        ).fetchall()
        return {(str(key), int(ix)) for key, ix in rows}

    @explained("read")
    def held(self, items: Sequence[Item]) -> set[Item]:
        rows = (
            self.connect()
            .execute(
                f"SELECT c.request_key, c.sample_ix FROM {_PAIRS} JOIN cache_claims c "
                f"ON c.request_key = d.k AND c.sample_ix = d.i WHERE c.expires >= {_NOW}",
                _arrays(items),
            )
            .fetchall()
        )
        return {(str(key), int(ix)) for key, ix in rows}
