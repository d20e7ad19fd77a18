"""Typed errors of the job manager; each says what went wrong and what to do next."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from jobs_db import FinetuneJob

__all__ = [
    "DailyJobLimit",
    "FineTuningApiError",
    "LabDatabaseError",
    "SuffixConflict",
    "UnknownJob",
]


class SuffixConflict(LabmgrError):
    """The suffix is already used by a job trained on a different file (other content)."""


class DailyJobLimit(LabmgrError):
    """The organization reached its daily fine-tuning job limit."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        limit: int | None = None,
        frees_at: datetime | None = None,
        created: list[FinetuneJob] | None = None,
    ) -> None:
        super().__init__(message, hint)
        self.limit = limit
        """Jobs allowed per rolling 24 h, as the API said (None if it did not say)."""
        self.frees_at = frees_at
        """When the next slot frees (UTC), or None when no job of this lab explains the limit."""
        self.created = created or []
        """Jobs created (and recorded) before the limit was hit, e.g. earlier seeds."""


class UnknownJob(LabmgrError):
    """A job id that neither the database nor any configured key knows."""


class FineTuningApiError(LabmgrError):
    """The API refused a fine-tuning request (the message is the API's, keys removed)."""


class LabDatabaseError(LabmgrError):
    """The lab's database cannot be opened or is at an unknown schema."""
