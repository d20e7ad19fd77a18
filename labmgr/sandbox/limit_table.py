"""Rate limits as configured, per organization and model family, and per project.

The body of `POST /sandbox/limits` and of a `--limits` file (JSON or TOML)::

    {"gpt-4.1-mini": {"rpm": 3000, "tpm": 2000000, "batch_queue_tokens": 20000000},
     "*": {"rpm": 500, "tpm": 200000},
     "projects": {"proj_alpha": {"gpt-4.1-mini": {"rpm": 100}}}}

A snapshot and its fine-tunes count under their alias's family, as at OpenAI.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labmgr.sandbox.behaviour import CATALOGUE
from labmgr.sandbox.errors import SandboxError

__all__ = ["LimitTable", "LimitsError", "ModelLimits", "limit_family"]

DEFAULT_KEY = "*"
PROJECTS_KEY = "projects"
_FIELDS = ("rpm", "tpm", "batch_queue_tokens")
_PROJECT_FIELDS = ("rpm", "tpm")


class LimitsError(SandboxError, ValueError):
    """A limits body or file that cannot be used (the message names the source and the key)."""


def limit_family(model: str) -> str | None:
    """The alias whose limits `model` (a snapshot, a fine-tune) counts under, if any."""
    if model.startswith("ft:"):
        parts = model.split(":")
        if len(parts) < 3:
            return None
        model = parts[1]
    card = CATALOGUE.get(model)
    if card is None:
        return None
    return card.snapshot_of or card.id


@dataclass(frozen=True)
class ModelLimits:
    """One model family's limits; None leaves that dimension unlimited."""

    rpm: int | None = None
    """Requests per minute."""
    tpm: int | None = None
    """Tokens per minute: prompt tokens plus the requested completion budget."""
    batch_queue_tokens: int | None = None
    """Tokens the organization may have enqueued in unfinished batches for this family."""

    def to_json(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in _FIELDS if getattr(self, name) is not None}


@dataclass(frozen=True)
class LimitTable:
    """The limits a sandbox enforces (empty: none, the sandbox's default)."""

    models: Mapping[str, ModelLimits] = field(default_factory=dict)
    """Per organization: model family (or ``*``) → limits."""
    projects: Mapping[str, Mapping[str, ModelLimits]] = field(default_factory=dict)
    """Per project id: model family (or ``*``) → that project's own caps."""

    @property
    def empty(self) -> bool:
        return not self.models and not self.projects

    def organization_limits(self, family: str) -> ModelLimits | None:
        return self.models.get(family) or self.models.get(DEFAULT_KEY)

    def project_limits(self, project: str, family: str) -> ModelLimits | None:
        table = self.projects.get(project, {})
        return table.get(family) or table.get(DEFAULT_KEY)

    def to_json(self) -> dict[str, Any]:
        """The body that sets this table (what `GET /sandbox/limits` shows)."""
        body: dict[str, Any] = {key: limits.to_json() for key, limits in self.models.items()}
        if self.projects:
            body[PROJECTS_KEY] = {
                project: {key: limits.to_json() for key, limits in table.items()}
                for project, table in self.projects.items()
            }
        return body

    @classmethod
    def from_json(cls, body: Any, *, source: str) -> LimitTable:
        """Check a limits body; `source` names it in errors (a file, or the endpoint)."""
        if not isinstance(body, Mapping):
            raise LimitsError(
                f"{source}: expected an object mapping model names to limits, "
                'e.g. {"gpt-4.1-mini": {"rpm": 3000, "tpm": 2000000}}'
            )
        models = _model_table(body, source, _FIELDS, skip=PROJECTS_KEY)
        projects: dict[str, dict[str, ModelLimits]] = {}
        raw_projects = body.get(PROJECTS_KEY, {})
        if not isinstance(raw_projects, Mapping):
            raise LimitsError(f"{source}: `projects` must map project ids to model limits")
        for project, table in raw_projects.items():
            where = f"{source}, project {project}"
            if not isinstance(table, Mapping):
                raise LimitsError(f"{where}: expected an object mapping model names to limits")
            projects[str(project)] = _model_table(table, where, _PROJECT_FIELDS)
        return cls(models, projects)

    @classmethod
    def from_file(cls, path: str | Path) -> LimitTable:
        """Read a JSON or TOML limits file (by suffix; other names are tried as both)."""
        path = Path(path)
        try:
            text = path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise LimitsError(f"cannot read limits file {path}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise LimitsError(f"limits file {path} is not UTF-8 text") from None
        body = _parse_text(path, text)
        return cls.from_json(body, source=f"limits file {path}")


def _parse_text(path: Path, text: str) -> Any:
    suffix = path.suffix.lower()
    parsers = [("JSON", json.loads), ("TOML", tomllib.loads)]
    if suffix in (".json", ".toml"):
        parsers = [p for p in parsers if p[0] == suffix[1:].upper()]
    for name, parse in parsers:
        try:
            return parse(text)
        except ValueError as exc:  # TOMLDecodeError is a ValueError
            if len(parsers) == 1:
                raise LimitsError(f"limits file {path} is not valid {name}: {exc}") from None
    raise LimitsError(
        f"limits file {path} is neither valid JSON nor valid TOML "
        "(name it .json or .toml to see the parser's message)"
    )


def _model_table(
    body: Mapping[str, Any], source: str, fields: tuple[str, ...], skip: str | None = None
) -> dict[str, ModelLimits]:
    table: dict[str, ModelLimits] = {}
    named: dict[str, str] = {}
    for key, entry in body.items():
        if key == skip:
            continue
        family = DEFAULT_KEY if key == DEFAULT_KEY else limit_family(str(key))
        if family is None or str(key).startswith("ft:"):
            nested = isinstance(entry, Mapping) and any(
                isinstance(v, Mapping) for v in entry.values()
            )
            hint = ' (in TOML, quote a name with dots: ["gpt-4.1-mini"])' if nested else ""
            raise LimitsError(
                f"{source}: unknown model {key!r}{hint}; name a catalogue model (its "
                "snapshots and fine-tunes count under it) or '*' for every other model"
            )
        if family in named:
            raise LimitsError(
                f"{source}: {named[family]!r} and {key!r} both set the limits of {family}; keep one"
            )
        named[family] = str(key)
        table[family] = _model_limits(entry, f"{source}, model {key}", fields)
    return table


def _model_limits(entry: Any, where: str, fields: tuple[str, ...]) -> ModelLimits:
    if not isinstance(entry, Mapping):
        raise LimitsError(f"{where}: expected an object with {', '.join(fields)}")
    unknown = sorted(set(entry) - set(fields))
    if unknown:
        raise LimitsError(
            f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(fields)}"
        )
    if not entry:
        raise LimitsError(f"{where}: give at least one of {', '.join(fields)}")
    values: dict[str, int] = {}
    for name, value in entry.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise LimitsError(f"{where}: `{name}` must be a positive integer (got {value!r})")
        values[name] = value
    return ModelLimits(**values)
