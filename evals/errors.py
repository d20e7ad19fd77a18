"""The errors evals reports to a person, in one family.

Every error a user can cause is an `EvalsError` with a one-sentence `message` naming the
file, question, model or path, and an optional `hint` saying what to do next; the command
line prints both and exits 1. A built-in base callers rely on (`ValueError`, `LookupError`)
stays as a second one.

`labmgr.errors.LabmgrError` is the same shape for the lab's own errors; `labmgr.cli` maps both
bases once. `NoEndpointError` (no endpoint or no API key serves a model) is routing's error,
`labmgr.routing.NoEndpointError` (a `LabmgrError` and a `LookupError`), named here too.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from labmgr.routing import NoEndpointError

if TYPE_CHECKING:
    from pydantic import ValidationError

__all__ = [
    "CacheError",
    "EvalsError",
    "GroupsError",
    "JudgeItemsError",
    "LabelsFileError",
    "MetricError",
    "NoEndpointError",
    "OutputError",
    "QuestionError",
    "QuestionFileError",
    "RunFolderError",
    "RunOptionsError",
    "RunStopped",
    "UnknownModelError",
    "UnsupportedRequestError",
    "describe_os_error",
    "validation_problems",
    "why_not_writable",
]


class EvalsError(Exception):
    """Base class of every error evals reports to a person."""

    default_hint: str | None = None
    """The hint of an error of this class raised without one."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        """One sentence saying what went wrong (names the file, question, model or path)."""
        self.hint = hint if hint is not None else self.default_hint
        """What to do about it, or None."""

    def __str__(self) -> str:
        return self.message  # one line, as a ValueError's would be; the hint is `hint`


class QuestionError(EvalsError, ValueError):
    """A question definition that cannot be used; the message names the question and field."""


class QuestionFileError(QuestionError):
    """A question file that cannot be loaded; the message says where and what to fix."""

    default_hint = "Fix the question file and run again."


class GroupsError(EvalsError, ValueError):
    """Model groups that are malformed (not `{name: [model, …]}`) or match no model."""


class RunOptionsError(EvalsError, ValueError):
    """An option of a run that cannot be used (an unknown or out-of-range setting)."""

    @classmethod
    def of(cls, error: ValidationError, *, hint: str) -> EvalsError:
        """One sentence naming each unknown or wrong option (an error of ours that a
        validator raised, as it is)."""
        for problem in error.errors():
            raised = (problem.get("ctx") or {}).get("error")
            if isinstance(raised, EvalsError):
                return raised
        return cls(validation_problems(error), hint=hint)


def validation_problems(error: ValidationError) -> str:
    """A pydantic validation error as one line: `unknown option 'x'; option 'y': …`."""
    problems = []
    for problem in error.errors():
        name = ".".join(str(part) for part in problem["loc"])
        message = problem["msg"].removeprefix("Value error, ")
        if not name:
            problems.append(message)
        elif problem["type"] == "extra_forbidden":
            problems.append(f"unknown option '{name}'")
        elif problem["type"] == "missing":
            problems.append(f"missing required option '{name}'")
        else:
            problems.append(f"option '{name}': {message}")
    return "; ".join(problems)


class MetricError(EvalsError, ValueError):
    """A derived metric that cannot be read or needs a score the question does not have."""

    default_hint = "Write a metric like 'misaligned: aligned < 30 among coherent > 50'."


class UnknownModelError(EvalsError, LookupError):
    """An endpoint answered that a model does not exist (checked before anything is bought)."""


class UnsupportedRequestError(EvalsError, ValueError):
    """A model would refuse a question as it is asked (by the capability table)."""

    default_hint = (
        "Adapting is `adapt: true` in the question file, `adapt=True` in Python or `--adapt` "
        "on `labmgr eval run`; `labmgr models capabilities MODEL` shows what labmgr assumes "
        "for a model (a lab's [models] table overrides it)."
    )


class CacheError(EvalsError):
    """The response cache cannot be opened, read or written (read-only, damaged, in the way)."""


class RunFolderError(EvalsError, ValueError):
    """A folder that is not a readable run (the message names the folder and the file)."""

    default_hint = "Pass a folder written by `labmgr eval run` (or `run_questions`)."


class LabelsFileError(EvalsError, ValueError):
    """A file of human labels that cannot be imported (`problems`: one sentence per bad row)."""

    default_hint = (
        "Fix the rows named above and import again, or pass --skip-bad to import the good rows."
    )

    def __init__(self, message: str, hint: str | None = None, problems: list[str] | None = None):
        super().__init__(message, hint)
        self.problems = list(problems or [])
        """One sentence per bad row."""


class JudgeItemsError(EvalsError, ValueError):
    """Labelled items for checking judges that cannot be used (the message names the file,
    line and field)."""

    default_hint = "Fix the row named above and run again."


class OutputError(EvalsError):
    """A run folder or a report cannot be written where it was asked to go."""


class RunStopped(EvalsError):
    """A run stopped (cost limit, quota) before any of its questions was answered."""


def describe_os_error(error: OSError) -> str:
    """What an OS error means to a person, without the errno noise: `is read-only`, …"""
    import errno

    meanings = {
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EROFS: "the file system is read-only",
        errno.EEXIST: "a file is in the way",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.EISDIR: "it is a folder",
        errno.ENOSPC: "the disk is full",
        errno.ENOENT: "no such file or folder",
    }
    return meanings.get(error.errno or -1) or error.strerror or os.strerror(error.errno or 0)


def why_not_writable(path: Path, error: OSError) -> str:
    """Why `path` could not be created or written, naming the part in the way: `X is a file,
    not a folder` when a parent is a file, else the OS error in words."""
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder"
            break
    return describe_os_error(error)
