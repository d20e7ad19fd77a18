"""`Settings`: everything a command needs to know about its lab, and `load_settings`."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from labmgr.capabilities import CapabilityOverride
from labmgr.errors import ConfigError
from labmgr.pricing import Price
from labmgr.settings._config import ApiDefaults, EndpointConfig, EvalDefaults, parse_config
from labmgr.settings._location import CONFIG_FILE_NAME, LabSource, locate_lab

DB_FILE_NAME = "labmgr.db"
"""File name of the default SQLite database inside the lab folder."""
ACCOUNTS_FILE_NAME = "accounts.json"
"""File name of the key → organization/project cache inside the lab folder."""
SHARED_MODELS_FILE_NAME = "shared_models.json"
"""File name of the fine-tune → key memory (models shared by other organizations)."""


class DbUrlSource(enum.StrEnum):
    """Where the database URL came from, in order of precedence."""

    ENV = "LABMGR_DB_URL"
    CONFIG = "config file"
    DEFAULT = "default: SQLite in the lab"


class CacheUrlSource(enum.StrEnum):
    """Where the response cache's URL came from, in order of precedence."""

    ENV = "LABMGR_CACHE_URL"
    CONFIG = "config file"
    DEFAULT = "default: SQLite in the cache folder"


CACHE_FILE_NAME = "responses.sqlite"
"""File name of the default SQLite response cache inside the cache folder."""
FIGURES_DIR_NAME = "figures"
"""Inside the cache folder: the figures of the lab's reports, each named by the digest of its
input (a copy, drawn again when missing)."""


class Settings(BaseModel):
    """The resolved settings of one lab. Build it with `load_settings`."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    home: Path
    """The lab folder (holds ``config.toml``, the default database, ``cache/``, ``runs/``)."""
    found_by: LabSource
    """How the lab folder was chosen."""
    config_path: Path
    """The config file (it may not exist: then every setting has its default)."""
    db_url: str
    """SQLAlchemy URL of the jobs database (may hold a password: show `masked_db_url`)."""
    db_url_source: DbUrlSource
    """Where `db_url` came from."""
    cache_dir: Path
    """Folder of the response cache (and of its SQLite file, unless `cache_url` says else)."""
    cache_url: str = ""
    """SQLAlchemy URL of the response cache (may hold a password: show `masked_cache_url`);
    by default the SQLite file ``responses.sqlite`` in `cache_dir`."""
    cache_url_source: CacheUrlSource = CacheUrlSource.DEFAULT
    """Where `cache_url` came from."""
    runs_dir: Path
    """Folder of evaluation runs and reports."""
    endpoints: dict[str, EndpointConfig]
    """Named endpoints from the config, beside the built-in ``openai`` and ``openrouter``."""
    prices: dict[str, Price]
    """Price overrides by model id or glob (see `labmgr.pricing.price_for`)."""
    models: dict[str, CapabilityOverride] = {}
    """Capability overrides by model id or glob, ``[models."…"]`` (see
    `labmgr.capabilities.capabilities_for`)."""
    api: ApiDefaults
    """Timeout and retries of API clients."""
    eval: EvalDefaults
    """Evaluation defaults: concurrency cap, timeout, retries."""

    @model_validator(mode="before")
    @classmethod
    def _default_cache_url(cls, data: Any) -> Any:
        """Without a `cache_url`, the cache is the SQLite file in `cache_dir`."""
        if isinstance(data, dict) and not data.get("cache_url") and data.get("cache_dir"):
            return {**data, "cache_url": default_cache_url(Path(data["cache_dir"]))}
        return data

    @property
    def accounts_path(self) -> Path:
        """The cache of each key's organization/project (keyed by fingerprint, never the key)."""
        return self.home / ACCOUNTS_FILE_NAME

    @property
    def shared_models_path(self) -> Path:
        """Where the key that can use each shared fine-tune is remembered (env var names and
        key fingerprints, never a key)."""
        return self.home / SHARED_MODELS_FILE_NAME

    @property
    def figures_dir(self) -> Path:
        """The figures of the lab's reports, shared by all its runs (safe to delete)."""
        return self.cache_dir / FIGURES_DIR_NAME

    @property
    def masked_db_url(self) -> str:
        """`db_url` with its password replaced by ``***``."""
        return mask_db_url(self.db_url)

    @property
    def masked_cache_url(self) -> str:
        """`cache_url` with its password replaced by ``***``."""
        return mask_db_url(self.cache_url)

    def ensure_dirs(self) -> None:
        """Create the lab folder, ``cache/`` and ``runs/`` if missing (before any write)."""
        for directory in (self.home, self.cache_dir, self.runs_dir):
            directory.mkdir(parents=True, exist_ok=True)


def mask_db_url(url: str) -> str:
    """A database URL safe to print: the password becomes ``***``."""
    from sqlalchemy.engine import make_url  # imported here: it is slow to import
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError):
        return "<unparsable URL>"


def _check_db_url(url: str, origin: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        make_url(url)
    except (ArgumentError, ValueError):
        raise ConfigError(
            f"{origin}: {mask_db_url(url)!s} is not a SQLAlchemy database URL.",
            hint="Use e.g. sqlite:////path/to/labmgr.db or postgresql+psycopg://user@host/db.",
        ) from None
    return url


def _check_cache_url(url: str, origin: str) -> str:
    """A cache URL must be a SQLAlchemy URL of SQLite or PostgreSQL (what the cache speaks)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        backend = make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        backend = ""
    if backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"{origin}: {mask_db_url(url)!s} is not a SQLite or PostgreSQL database URL.",
            hint="Use e.g. postgresql+psycopg://user@host/labmgr, or unset it for the "
            "SQLite file in the lab's cache folder.",
        )
    return url


def default_cache_url(cache_dir: Path) -> str:
    """The SQLite file ``responses.sqlite`` in the cache folder `cache_dir`."""
    return f"sqlite:///{(cache_dir / CACHE_FILE_NAME).as_posix()}"


def default_db_url(home: Path) -> str:
    """The SQLite file ``labmgr.db`` in the lab folder `home`."""
    return f"sqlite:///{(home / DB_FILE_NAME).as_posix()}"


def _cache_dir(lab: Path, configured: str, env: Mapping[str, str]) -> Path:
    """``$LABMGR_CACHE_DIR`` if set (a cache shared by several labs), else the config's
    ``cache_dir`` relative to the lab folder."""
    from_env = env.get("LABMGR_CACHE_DIR", "").strip()
    if from_env:
        return Path(from_env).expanduser().resolve()
    return (lab / Path(configured).expanduser()).resolve()


def load_settings(
    home: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Settings:
    """Find the lab (`home`, ``LABMGR_HOME``, ``.labmgr/`` upward, per-user) and read its config
    (``LABMGR_DB_URL``, ``LABMGR_CACHE_DIR`` and ``LABMGR_CACHE_URL`` win over the config's
    database and cache).

    Raises `LabNotFound` for an explicit lab that does not exist and `ConfigError` (naming
    file, line and field) for a malformed config file. Creates nothing.
    """
    env = os.environ if environ is None else environ
    location = locate_lab(home, environ=env, cwd=cwd)
    lab = location.path
    config_path = lab / CONFIG_FILE_NAME
    config = parse_config(config_path)

    cache_dir = _cache_dir(lab, config.lab.cache_dir, env)
    env_cache_url = env.get("LABMGR_CACHE_URL", "").strip()
    if env_cache_url:
        cache_url = _check_cache_url(env_cache_url, "LABMGR_CACHE_URL")
        cache_source = CacheUrlSource.ENV
    elif config.lab.cache_url:
        cache_url = _check_cache_url(config.lab.cache_url, f"{config_path}: lab.cache_url")
        cache_source = CacheUrlSource.CONFIG
    else:
        cache_url = default_cache_url(cache_dir)
        cache_source = CacheUrlSource.DEFAULT

    env_url = env.get("LABMGR_DB_URL", "").strip()
    if env_url:
        db_url, source = _check_db_url(env_url, "LABMGR_DB_URL"), DbUrlSource.ENV
    elif config.lab.db_url:
        db_url = _check_db_url(config.lab.db_url, f"{config_path}: lab.db_url")
        source = DbUrlSource.CONFIG
    else:
        db_url, source = default_db_url(lab), DbUrlSource.DEFAULT

    return Settings(
        home=lab,
        found_by=location.source,
        config_path=config_path,
        db_url=db_url,
        db_url_source=source,
        cache_dir=cache_dir,
        cache_url=cache_url,
        cache_url_source=cache_source,
        runs_dir=(lab / Path(config.lab.runs_dir).expanduser()).resolve(),
        endpoints=dict(config.endpoints),
        prices=dict(config.prices),
        models=dict(config.models),
        api=config.api,
        eval=config.eval,
    )
