"""The lab's user-facing errors: a one-sentence `message` and a `hint` saying what to do.

The command line prints ``Error: <message>`` and the hint, and exits 1. Messages never
contain an API key.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "CredentialCheckFailed",
    "InvalidTrainingFile",
    "LabNotFound",
    "LabmgrError",
    "MissingApiKey",
    "NoKeyForOrganization",
    "TrainingFileNotFound",
    "UnknownBaseModel",
]


class LabmgrError(Exception):
    """Base class of every error labmgr reports to a person."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\n{self.hint}"


class ConfigError(LabmgrError):
    """The lab's config file (or a setting from the environment) is malformed."""


class LabNotFound(LabmgrError):
    """An explicitly chosen lab folder (``--home`` or ``LABMGR_HOME``) does not exist."""


class MissingApiKey(LabmgrError):
    """No API key is configured for the endpoint or env var that was asked for."""


class NoKeyForOrganization(MissingApiKey):
    """None of the configured keys belongs to the organization/project that was asked for."""


class CredentialCheckFailed(LabmgrError):
    """The request that identifies a key's organization and project failed."""


class TrainingFileNotFound(LabmgrError):
    """The training file to validate or upload does not exist."""


class UnknownBaseModel(LabmgrError):
    """The base model is not one labmgr knows how to fine-tune."""


class InvalidTrainingFile(LabmgrError):
    """A training file broke one or more rules; `report` holds every error with its line."""

    def __init__(self, message: str, hint: str | None = None, report: object = None) -> None:
        super().__init__(message, hint)
        self.report = report  # the ValidationReport (typed loosely: no import here)
