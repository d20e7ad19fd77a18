"""The lab's jobs database: opened, described and upgraded from the lab's settings, with
errors a person can act on (a damaged or empty file, an unreachable server, a bad URL)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from jobs_db import (
    Database,
    DatabaseDamagedError,
    DatabaseError,
    DatabaseFileEmptyError,
    SchemaTooNewError,
    current_revision,
    database_file,
    head_revision,
    known_revisions,
    open_database,
    upgrade,
)
from labmgr.errors import LabDatabaseError, LabNotFound
from labmgr.settings import DbUrlSource, Settings

DatabaseState = Literal["not created", "empty file", "current", "needs upgrade", "newer"]


class LabDatabaseStatus(BaseModel):
    """Where the lab's database is and which schema it holds (`labmgr db info`)."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    db_url: str
    """The database URL, password hidden."""
    source: str
    """Where the URL came from (``LABMGR_DB_URL``, the config file, the default)."""
    file: Path | None
    """The SQLite file, or None for a server database."""
    revision: str | None
    """The schema revision the database is at; None when it has no schema yet."""
    code_revision: str
    """The schema revision this labmgr writes."""
    state: DatabaseState


def _require_lab(settings: Settings) -> None:
    if not settings.home.is_dir():
        raise LabNotFound(
            f"No lab found: {settings.home} ({settings.found_by.value}) does not exist.",
            hint="Run `labmgr init` in your project folder, or pass --home / set LABMGR_HOME.",
        )


def _error(settings: Settings, exc: DatabaseError) -> LabDatabaseError:
    """`exc` from jobs_db as an error that names the lab's database and what to do."""
    if isinstance(exc, DatabaseDamagedError):
        return LabDatabaseError(
            f"The lab's database file {exc.path} is damaged: it is not a SQLite database, or "
            "its contents are corrupt.",
            hint=f"Restore it from a backup, or move it aside (mv {exc.path} "
            f"{exc.path}.damaged) and record your jobs again with `labmgr jobs import "
            "--from-api`.",
        )
    if isinstance(exc, DatabaseFileEmptyError):
        return LabDatabaseError(
            f"The lab's database file {exc.path} is empty (0 bytes), so it holds no jobs.",
            hint="If it should hold your jobs, restore it from a backup; to start a new "
            "database in it, run `labmgr db upgrade` (then `labmgr jobs import --from-api`).",
        )
    if isinstance(exc, SchemaTooNewError):
        return LabDatabaseError(
            f"The database {settings.masked_db_url} was written by a newer labmgr: {exc}.",
            hint="Upgrade labmgr (pip install -U labmgr).",
        )
    origin = {
        DbUrlSource.ENV: "LABMGR_DB_URL",
        DbUrlSource.CONFIG: f"{settings.config_path} (lab.db_url)",
    }.get(settings.db_url_source, f"the lab folder {settings.home}")
    if database_file(settings.db_url) is not None:
        return LabDatabaseError(sentence(exc), hint=f"Check the database path in {origin}.")
    hint = f"Check the URL in {origin} and that the server is reachable."
    return LabDatabaseError(sentence(exc), hint=hint)


def sentence(exc: Exception) -> str:
    """`exc`'s text as a sentence (capital first, full stop)."""
    text = str(exc)
    return f"{text[:1].upper()}{text[1:]}."


@contextmanager
def lab_database(settings: Settings) -> Iterator[Database]:
    """The lab's database, created or upgraded to this code's schema, closed afterwards; a
    zero-byte file raises `LabDatabaseError` (never silently a new lab)."""
    _require_lab(settings)
    try:
        db = open_database(settings.db_url, allow_empty_file=False)
    except DatabaseError as exc:
        raise _error(settings, exc) from None
    try:
        yield db
    finally:
        db.close()


def lab_database_status(settings: Settings) -> LabDatabaseStatus:
    """Where the lab's database is and its schema revision; changes nothing (`db info`)."""
    file = database_file(settings.db_url)
    try:
        revision = current_revision(settings.db_url)
    except DatabaseError as exc:
        raise _error(settings, exc) from None
    head = head_revision()
    state: DatabaseState
    if file is not None and file.is_file() and file.stat().st_size == 0:
        state = "empty file"
    elif revision is None:
        state = "not created"
    elif revision == head:
        state = "current"
    elif revision in known_revisions():
        state = "needs upgrade"
    else:
        state = "newer"
    return LabDatabaseStatus(
        db_url=settings.masked_db_url,
        source=settings.db_url_source.value,
        file=file,
        revision=revision,
        code_revision=head,
        state=state,
    )


def upgrade_lab_database(settings: Settings) -> str:
    """Create or migrate the lab's database (also in a zero-byte file); returns the revision."""
    _require_lab(settings)
    try:
        return upgrade(settings.db_url)
    except DatabaseError as exc:
        raise _error(settings, exc) from None
