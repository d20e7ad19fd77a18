"""Typed errors of the job manager; each says what went wrong and what to do next.

LabmgrError (labmgr.errors)
├── SuffixConflict          the suffix was used for other training content
├── DailyJobLimit           the organization's daily job limit (and when a slot frees)
├── UnknownJob              a job id no database row or key knows
├── UnknownModel            a model name the lab's database does not hold
├── AmbiguousJobId          a shortened job id that names several jobs
├── UnknownJobStatus        a status filter no job can match
├── FineTuningApiError      the API refused a request (its message, keys removed)
│   └── JobRefused          the API answered jobs.create with a 4xx (the job cannot be made)
├── UnsupportedOption       an option the API refuses for this base model or method
├── InvalidGrader           a reinforcement grader that does not match the SDK's types
├── InvalidSweepSpec        a sweep spec with an unknown key, an empty level list, …
├── LabFolderError          the lab folder cannot be written (a lock or state file)
└── LabDatabaseError        the lab's database cannot be opened
    ├── LabDatabaseDamaged  the SQLite file is not a database, or is corrupt
    └── LabDatabaseEmpty    the SQLite file holds zero bytes
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    import openai

    from jobs_db import FinetuneJob

__all__ = [
    "AmbiguousJobId",
    "DailyJobLimit",
    "FineTuningApiError",
    "InvalidGrader",
    "InvalidSweepSpec",
    "JobRefused",
    "LabDatabaseDamaged",
    "LabDatabaseEmpty",
    "LabDatabaseError",
    "LabFolderError",
    "SuffixConflict",
    "UnknownJob",
    "UnknownJobStatus",
    "UnknownModel",
    "UnsupportedOption",
    "api_message",
]

_KEYISH = re.compile(r"(sk|rk|pk)-[A-Za-z0-9_*\-]{3,}")


def api_message(exc: openai.APIError) -> str:
    """The API's own message of `exc`, safe to show: anything key-shaped is replaced."""
    body = exc.body if isinstance(exc.body, dict) else None
    message = body.get("message") if body else None
    text = message if isinstance(message, str) and message else exc.message
    return _KEYISH.sub("<key>", str(text))


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


class UnknownModel(LabmgrError):
    """A model name the lab's database does not hold (or a base where a fine-tune is needed)."""


class AmbiguousJobId(LabmgrError):
    """A shortened job id or prefix that matches several recorded jobs."""


class UnknownJobStatus(LabmgrError):
    """A status filter that is not a status any job can have."""


class LabFolderError(LabmgrError):
    """A file labmgr keeps in the lab folder (a lock, a state file) cannot be written."""


class FineTuningApiError(LabmgrError):
    """The API refused a fine-tuning request (the message is the API's, keys removed)."""


class JobRefused(FineTuningApiError):
    """The API refused to create a job (a 4xx other than the daily limit): final."""


class UnsupportedOption(LabmgrError):
    """An option the API refuses for the base model or method (``beta`` with supervised)."""


class InvalidGrader(LabmgrError):
    """A reinforcement fine-tuning grader that does not match the SDK's grader types."""


class InvalidSweepSpec(LabmgrError):
    """A sweep spec that cannot be planned (names the file, the key and what to do)."""


class LabDatabaseError(LabmgrError):
    """The lab's database cannot be opened or is at an unknown schema."""


class LabDatabaseDamaged(LabDatabaseError):
    """The lab's SQLite file is not a database, or is corrupt (restore it or move it aside)."""


class LabDatabaseEmpty(LabDatabaseError):
    """The lab's SQLite file holds zero bytes: not silently a new lab (`labmgr db upgrade`)."""
