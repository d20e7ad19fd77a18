"""Opening the lab's jobs database from its settings, with errors a person can act on."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from jobs_db import Database, DatabaseError, SchemaTooNewError, open_database
from labmgr.errors import LabNotFound
from labmgr.finetuning.errors import LabDatabaseError
from labmgr.settings import DbUrlSource, Settings

__all__ = ["lab_database", "open_lab_database"]


def open_lab_database(settings: Settings) -> Database:
    """The lab's database, created or upgraded to this code's schema.

    Raises `LabNotFound` when the lab folder does not exist (run ``labmgr init``) and
    `LabDatabaseError` when the database cannot be opened.
    """
    if not settings.home.is_dir():
        raise LabNotFound(
            f"No lab found: {settings.home} ({settings.found_by.value}) does not exist.",
            hint="Run `labmgr init` in your project folder, or pass --home / set LABMGR_HOME.",
        )
    try:
        return open_database(settings.db_url)
    except SchemaTooNewError as exc:
        raise LabDatabaseError(
            f"The database {settings.masked_db_url} was written by a newer labmgr: {exc}",
            hint="Upgrade labmgr (pip install -U labmgr).",
        ) from None
    except DatabaseError as exc:
        where = (
            "LABMGR_DB_URL"
            if settings.db_url_source == DbUrlSource.ENV
            else f"{settings.config_path} (lab.db_url)"
            if settings.db_url_source == DbUrlSource.CONFIG
            else "the lab folder"
        )
        raise LabDatabaseError(
            f"Cannot open the database {settings.masked_db_url}: {exc}",
            hint=f"Check the URL in {where} and that the server is reachable.",
        ) from None


@contextmanager
def lab_database(settings: Settings) -> Iterator[Database]:
    """`open_lab_database` as a context manager that closes the database afterwards."""
    db = open_lab_database(settings)
    try:
        yield db
    finally:
        db.close()
