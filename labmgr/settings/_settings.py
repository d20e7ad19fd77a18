"""The lab: where it is (`--home`, `LABMGR_HOME`, `.labmgr/` upward, then a per-user default),
`Settings` (everything a command needs to know about it, read by `load_settings`), and
`labmgr init`, which makes one with a commented config, never clobbering a file."""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from labmgr.capabilities import CapabilityOverride
from labmgr.errors import ConfigError, LabmgrError, LabNotFound
from labmgr.pricing import Price
from labmgr.settings._config import ApiDefaults, EndpointConfig, EvalDefaults, parse_config

LAB_DIR_NAME = ".labmgr"
CONFIG_FILE_NAME = "config.toml"


class LabSource(enum.StrEnum):
    """How the lab folder was chosen, in order of precedence."""

    OPTION = "--home option"
    ENV = "LABMGR_HOME"
    UPWARD = "nearest .labmgr/ upward from the current directory"
    USER_DEFAULT = "per-user default"


def _user_default_lab() -> Path:
    xdg = os.environ.get("XDG_DATA_HOME", "").strip()
    if xdg:
        return Path(xdg).expanduser().resolve() / "labmgr"
    home = os.environ.get("HOME", "").strip()
    base = Path(home) if home else Path.home()
    return base.expanduser().resolve() / ".local" / "share" / "labmgr"


def _explicit_lab(path: Path, source: LabSource) -> Path:
    """A lab chosen by name: the folder itself, or the ``.labmgr/`` inside it."""
    path = path.expanduser().resolve()
    where = f"{path} (from {source.value})"
    init_dir = path.parent if path.name == LAB_DIR_NAME else path
    if not path.is_dir():
        raise LabNotFound(
            f"No lab folder at {where}: the directory does not exist.",
            hint=f"Create it with `labmgr init {init_dir}`.",
        )
    if (path / LAB_DIR_NAME).is_dir():
        return path / LAB_DIR_NAME
    if path.name == LAB_DIR_NAME or (path / CONFIG_FILE_NAME).is_file():
        return path
    raise LabNotFound(
        f"{where} is not a lab folder: it has neither {CONFIG_FILE_NAME} nor a {LAB_DIR_NAME}/ "
        "folder inside.",
        hint=f"Run `labmgr init {path}` to make a lab there, or point to an existing lab.",
    )


def locate_lab(home: str | os.PathLike[str] | None) -> tuple[Path, LabSource]:
    """The lab folder (holding ``config.toml``) by the resolution order every command uses,
    and how it was found. `LabNotFound` when `home` or ``LABMGR_HOME`` is not a lab; the
    per-user default need not exist yet."""
    if home is not None and str(home) != "":
        return _explicit_lab(Path(home), LabSource.OPTION), LabSource.OPTION
    env_home = os.environ.get("LABMGR_HOME", "").strip()
    if env_home:
        return _explicit_lab(Path(env_home), LabSource.ENV), LabSource.ENV
    start = Path.cwd().resolve()
    for directory in (start, *start.parents):
        if (directory / LAB_DIR_NAME).is_dir():
            return directory / LAB_DIR_NAME, LabSource.UPWARD
    return _user_default_lab(), LabSource.USER_DEFAULT


# What `labmgr init` writes: every setting, commented, at its default.
CONFIG_TEMPLATE = Path(__file__).with_name("config_template.toml").read_text(encoding="utf-8")


@dataclass
class InitResult:
    """What `init_lab` did: the lab folder, the paths it created and those already there."""

    home: Path
    created: list[Path] = field(default_factory=list)
    existing: list[Path] = field(default_factory=list)


def init_lab(directory: str | os.PathLike[str] = ".") -> InitResult:
    """Create ``DIRECTORY/.labmgr/`` (or `directory` itself if so named) with
    ``config.toml``, ``cache/`` and ``runs/``; never overwrites an existing file."""
    base = Path(directory).expanduser().resolve()
    home = base if base.name == LAB_DIR_NAME else base / LAB_DIR_NAME
    if home.exists() and not home.is_dir():
        raise LabmgrError(
            f"Cannot create the lab: {home} exists and is not a directory.",
            hint="Move that file away or choose another directory.",
        )
    result = InitResult(home=home)
    try:
        for directory_path in (home, home / "cache", home / "runs"):
            if directory_path.is_dir():
                result.existing.append(directory_path)
            else:
                directory_path.mkdir(parents=True)
                result.created.append(directory_path)
        config = home / CONFIG_FILE_NAME
        if config.exists():
            result.existing.append(config)
        else:
            with config.open("x", encoding="utf-8") as handle:
                handle.write(CONFIG_TEMPLATE)
            result.created.append(config)
    except OSError as exc:
        raise LabmgrError(
            f"Cannot create the lab at {home}: {exc.strerror or exc}.",
            hint="Check that the directory is writable.",
        ) from None
    return result


FIGURES_DIR_NAME = "figures"
"""Inside the cache folder: the figures of the lab's reports (copies, drawn again when missing)."""

Source = TypeVar("Source", bound=enum.StrEnum)


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


class Settings(BaseModel):
    """The resolved settings of one lab. Build it with `load_settings`."""

    model_config = ConfigDict(frozen=True, use_attribute_docstrings=True)

    home: Path
    """The lab folder (holds ``config.toml``, the default database, ``cache/``, ``runs/``)."""
    found_by: LabSource
    config_path: Path
    """The config file (when missing, every setting has its default)."""
    db_url: str
    """SQLAlchemy URL of the jobs database (may hold a password: show `masked_db_url`)."""
    db_url_source: DbUrlSource
    cache_dir: Path
    """Folder of the response cache's local copies (and its SQLite file by default)."""
    cache_url: str
    """SQLAlchemy URL of the response cache (may hold a password: show `masked_cache_url`)."""
    cache_url_source: CacheUrlSource
    runs_dir: Path
    endpoints: dict[str, EndpointConfig]
    """Named endpoints from the config, beside the built-in ``openai`` and ``openrouter``."""
    prices: dict[str, Price]
    """Price overrides by model id or glob (see `labmgr.pricing.price_for`)."""
    models: dict[str, CapabilityOverride] = {}
    """Capability overrides by model id or glob (see `labmgr.capabilities.capabilities_for`)."""
    api: ApiDefaults
    eval: EvalDefaults

    @property
    def accounts_path(self) -> Path:
        return self.home / "accounts.json"

    @property
    def shared_models_path(self) -> Path:
        return self.home / "shared_models.json"

    @property
    def figures_dir(self) -> Path:
        return self.cache_dir / FIGURES_DIR_NAME

    @property
    def masked_db_url(self) -> str:
        return mask_db_url(self.db_url)

    @property
    def masked_cache_url(self) -> str:
        return mask_db_url(self.cache_url)


def _backend(url: str) -> str | None:
    """The database kind of a SQLAlchemy URL (``sqlite``, …), or None when it is not one."""
    from sqlalchemy.engine import make_url  # imported here: it is slow to import
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).get_backend_name()
    except (ArgumentError, ValueError):
        return None


def mask_db_url(url: str) -> str:
    """A database URL safe to print: the password becomes ``***``."""
    from sqlalchemy.engine import make_url

    if _backend(url) is None:
        return "<unparsable URL>"
    return make_url(url).render_as_string(hide_password=True)


def _chosen_url(
    configured: str | None,
    sources: type[Source],
    where: str,
    default: str,
) -> tuple[str, Source]:
    """The environment's URL, else the config's, else `default`, with where it came from. A
    cache URL must be SQLite or PostgreSQL (what the cache speaks)."""
    env_name = str(sources["ENV"])
    from_env = os.environ.get(env_name, "").strip()
    if from_env:
        url, source, origin = from_env, sources["ENV"], env_name
    elif configured:
        url, source, origin = configured, sources["CONFIG"], where
    else:
        return default, sources["DEFAULT"]
    backend = _backend(url)
    if sources is CacheUrlSource and backend not in ("sqlite", "postgresql"):
        raise ConfigError(
            f"{origin}: {mask_db_url(url)} is not a SQLite or PostgreSQL database URL.",
            hint="Use e.g. postgresql+psycopg://user@host/labmgr, or unset it for the "
            "SQLite file in the lab's cache folder.",
        )
    if backend is None:
        raise ConfigError(
            f"{origin}: {mask_db_url(url)} is not a SQLAlchemy database URL.",
            hint="Use e.g. sqlite:////path/to/labmgr.db or postgresql+psycopg://user@host/db.",
        )
    return url, source


def load_settings(home: str | os.PathLike[str] | None = None) -> Settings:
    """Find the lab (`home`, ``LABMGR_HOME``, ``.labmgr/`` upward, per-user) and read its
    config; ``LABMGR_DB_URL``, ``LABMGR_CACHE_DIR`` and ``LABMGR_CACHE_URL`` win over it.
    Raises `LabNotFound` and `ConfigError` (naming file, line and field). Creates nothing."""
    lab, found_by = locate_lab(home)
    config_path = lab / CONFIG_FILE_NAME
    config = parse_config(config_path)
    cache_dir_env = os.environ.get("LABMGR_CACHE_DIR", "").strip()
    if cache_dir_env:  # one cache shared by several labs
        cache_dir = Path(cache_dir_env).expanduser().resolve()
    else:
        cache_dir = (lab / Path(config.lab.cache_dir).expanduser()).resolve()
    cache_url, cache_source = _chosen_url(
        config.lab.cache_url,
        CacheUrlSource,
        f"{config_path}: lab.cache_url",
        f"sqlite:///{(cache_dir / 'responses.sqlite').as_posix()}",
    )
    db_url, db_source = _chosen_url(
        config.lab.db_url,
        DbUrlSource,
        f"{config_path}: lab.db_url",
        f"sqlite:///{(lab / 'labmgr.db').as_posix()}",
    )
    return Settings(
        home=lab,
        found_by=found_by,
        config_path=config_path,
        db_url=db_url,
        db_url_source=db_source,
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
