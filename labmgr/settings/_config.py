"""The lab's ``config.toml``: its typed schema, and a parser whose errors name file/line/field."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from labmgr.capabilities import CapabilityOverride
from labmgr.errors import ConfigError
from labmgr.pricing import Price

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_BUILT_IN_ENDPOINTS = frozenset({"openai", "openrouter"})


class _Section(BaseModel):
    """A table of ``config.toml``; `CONFIG_TEMPLATE` documents every setting."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class LabSection(_Section):
    db_url: str | None = None
    cache_dir: str = "cache"
    cache_url: str | None = None
    runs_dir: str = "runs"


class ApiDefaults(_Section):
    timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=20)


class EvalDefaults(_Section):
    max_concurrency: int = Field(default=100, ge=1, le=10_000)
    request_timeout: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=6, ge=0, le=50)


class EndpointConfig(_Section):
    """``[endpoints.NAME]``: an OpenAI-compatible server and the env var holding its key."""

    base_url: str
    key_env: str
    models: list[str] = []
    """Model ids or globs this endpoint serves; the first endpoint with a match wins."""
    n: bool = False

    @field_validator("models")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        for pattern in value:
            if not pattern.strip():
                raise ValueError("a model pattern must not be empty")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not re.match(r"^https?://[^\s/]+", value):
            raise ValueError("must start with http:// or https:// followed by a host")
        return value.rstrip("/")

    @field_validator("key_env")
    @classmethod
    def _env_name(cls, value: str) -> str:
        if not _ENV_NAME.match(value):
            raise ValueError(
                "must be the NAME of an environment variable (letters, digits, _), not a key"
            )
        return value


class ConfigFile(_Section):
    """The whole ``config.toml``; every section is optional."""

    lab: LabSection = LabSection()
    api: ApiDefaults = ApiDefaults()
    eval: EvalDefaults = EvalDefaults()
    endpoints: dict[str, EndpointConfig] = {}
    prices: dict[str, Price] = {}
    models: dict[str, CapabilityOverride] = {}

    @field_validator("endpoints")
    @classmethod
    def _no_reserved_names(cls, value: dict[str, EndpointConfig]) -> dict[str, EndpointConfig]:
        clash = sorted(_BUILT_IN_ENDPOINTS & set(value))
        if clash:
            raise ValueError(
                f"endpoint name {clash[0]!r} is built in (its keys come from env var prefixes); "
                "choose another name"
            )
        return value


def _table_path(header: str) -> tuple[str, ...]:
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([^.\s"\']+)', header)
    return tuple(next(p for p in groups if p) if any(groups) else "" for groups in parts)


def find_line(text: str, loc: tuple[str | int, ...]) -> int | None:
    """Best-effort 1-based line of the setting at `loc` (e.g. ``("eval", "max_retries")``)."""
    keys = tuple(str(part) for part in loc)
    table: tuple[str, ...] = ()
    header_line: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("[") and not line.startswith("[["):
            table = _table_path(line.strip("[]").strip())
            if table == keys:
                return number
            if table == keys[: len(table)] and table:
                header_line = number
            continue
        match = re.match(r'^("[^"]*"|\'[^\']*\'|[A-Za-z0-9_.-]+)\s*=', line)
        if match:
            key_path = table + _table_path(match.group(1))
            if key_path == keys[: len(key_path)]:
                return number
    return header_line


def _describe(error: dict[str, Any]) -> str:
    if error["type"] == "extra_forbidden":
        return "unknown setting"
    return str(error["msg"]).removeprefix("Value error, ")


def parse_config(path: Path) -> ConfigFile:
    """Read and validate `path`; a missing file means every default."""
    if not path.is_file():
        return ConfigFile()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file ({exc}).") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        detail = str(exc)
        at = re.search(r"\(at line (\d+), column \d+\)", detail)
        where = f"{path}:{at.group(1)}" if at else str(path)
        raise ConfigError(
            f"{where}: not valid TOML: {detail}.",
            hint="Fix the syntax (see the comments `labmgr init` writes into config.toml).",
        ) from None
    try:
        return ConfigFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            loc = tuple(error["loc"])
            line = find_line(text, loc)
            where = f"{path}:{line}" if line else str(path)
            field = ".".join(str(part) for part in loc) or "(top level)"
            problems.append(f"{where}: {field}: {_describe(dict(error))}")
        raise ConfigError(
            "\n".join(problems),
            hint="Fix the setting in the config file; `labmgr init` writes a commented example.",
        ) from None
