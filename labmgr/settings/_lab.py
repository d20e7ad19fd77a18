"""The lab folder: where it is (`--home`, `LABMGR_HOME`, `.labmgr/` upward, then a per-user
default), and `labmgr init`, which makes one with a commented config, never clobbering a file."""

from __future__ import annotations

import enum
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from labmgr.errors import LabmgrError, LabNotFound

LAB_DIR_NAME = ".labmgr"
CONFIG_FILE_NAME = "config.toml"


class LabSource(enum.StrEnum):
    """How the lab folder was chosen, in order of precedence."""

    OPTION = "--home option"
    ENV = "LABMGR_HOME"
    UPWARD = "nearest .labmgr/ upward from the current directory"
    USER_DEFAULT = "per-user default"


def _user_default_lab(environ: Mapping[str, str]) -> Path:
    xdg = environ.get("XDG_DATA_HOME", "").strip()
    if xdg:
        return Path(xdg).expanduser().resolve() / "labmgr"
    home = environ.get("HOME", "").strip()
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


def locate_lab(
    home: str | os.PathLike[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> tuple[Path, LabSource]:
    """The lab folder (holding ``config.toml``) by the resolution order every command uses,
    and how it was found. `LabNotFound` when `home` or ``LABMGR_HOME`` is not a lab; the
    per-user default need not exist yet."""
    env = os.environ if environ is None else environ
    if home is not None and str(home) != "":
        return _explicit_lab(Path(home), LabSource.OPTION), LabSource.OPTION
    env_home = env.get("LABMGR_HOME", "").strip()
    if env_home:
        return _explicit_lab(Path(env_home), LabSource.ENV), LabSource.ENV
    start = (cwd if cwd is not None else Path.cwd()).resolve()
    for directory in (start, *start.parents):
        if (directory / LAB_DIR_NAME).is_dir():
            return directory / LAB_DIR_NAME, LabSource.UPWARD
    return _user_default_lab(env), LabSource.USER_DEFAULT


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
