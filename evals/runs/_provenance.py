"""What a run records about where it ran: package versions, endpoints (never keys), times."""

from __future__ import annotations

import platform
from datetime import UTC, datetime
from importlib import metadata
from typing import Any

__all__ = ["endpoints_of", "package_versions", "utc_now"]

_PACKAGES = ("openai", "pandas", "numpy", "scipy", "pyarrow", "seaborn", "matplotlib", "pydantic")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Versions of labmgr, Python and the libraries that shape the results."""
    from labmgr import __version__

    versions = {"labmgr": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def endpoints_of(models: list[str], router: Any) -> dict[str, dict[str, str | None]]:
    """Each model's base URL and the *name* of the key's environment variable (or an error)."""
    from evals.errors import NoEndpointError

    result: dict[str, dict[str, str | None]] = {}
    for model in models:
        try:
            endpoint = router.endpoint_for(model)
        except NoEndpointError as error:
            result[model] = {"base_url": None, "key_name": None, "error": error.message}
            continue
        result[model] = {
            "base_url": endpoint.base_url,
            "key_name": endpoint.key_name,
            "organization": endpoint.organization,
            "project": endpoint.project,
        }
    return result
