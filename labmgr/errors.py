"""The lab's user-facing errors: a one-sentence `message` and a `hint` saying what to do.

The command line prints ``Error: <message>`` and the hint, and exits 1. Messages never
contain an API key; each subclass below says when it is raised.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import openai

    from jobs_db import FinetuneJob

_KEYISH = re.compile(r"\b(?:sk|rk|pk)-[A-Za-z0-9_*\-]{3,}")


def scrub_keys(text: str, secret: str = "") -> str:
    """`text` with `secret` and anything shaped like an API key replaced by ``<key>``."""
    if secret:
        text = text.replace(secret, "<key>")
    return _KEYISH.sub("<key>", text)


def api_message(exc: openai.APIError) -> str:
    """The API's own message of `exc`, safe to show: anything key-shaped is replaced."""
    body = exc.body if isinstance(exc.body, dict) else None
    message = body.get("message") if body else None
    text = message if isinstance(message, str) and message else exc.message
    return scrub_keys(str(text))


class LabmgrError(Exception):
    """Base class of every error labmgr reports to a person."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(LabmgrError):
    """The lab's config file (or a setting from the env) is malformed."""


class LabNotFound(LabmgrError):
    """An explicitly chosen lab folder does not exist."""


class MissingApiKey(LabmgrError):
    """No key is configured for the endpoint or env var asked for."""


class CredentialCheckFailed(LabmgrError):
    """The request that finds a key's organization/project failed."""


class TrainingFileNotFound(LabmgrError):
    """The training file to validate or upload does not exist."""


class UnknownBaseModel(LabmgrError):
    """A base model labmgr does not know how to fine-tune."""


class InvalidTrainingFile(LabmgrError):
    """A training file broke rules (`report` holds each with its line)."""

    def __init__(self, message: str, hint: str | None = None, report: object = None) -> None:
        super().__init__(message, hint)
        self.report = report  # the ValidationReport (typed loosely: no import here)


class SuffixConflict(LabmgrError):
    """The suffix was used for other training content."""


class DailyJobLimit(LabmgrError):
    """The organization's daily job limit (and when a slot frees)."""

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
    """A job id no database row or key knows."""


class UnknownModel(LabmgrError):
    """A model name the lab's database does not hold."""


class FineTuningApiError(LabmgrError):
    """The API refused a request (its message, keys removed)."""


class JobRefused(FineTuningApiError):
    """The API answered jobs.create with a 4xx (the job cannot be made)."""


class UnsupportedOption(LabmgrError):
    """An option the API refuses for this base model or method."""


class InvalidGrader(LabmgrError):
    """A reinforcement grader that does not match the SDK's types."""


class InvalidSweepSpec(LabmgrError):
    """A sweep spec with an unknown key, an empty level list, …"""


class LabDatabaseError(LabmgrError):
    """The lab's database cannot be opened, is damaged, empty or too new."""
