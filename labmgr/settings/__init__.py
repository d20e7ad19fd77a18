"""The lab and its settings: where the lab is, what its config says, and `labmgr init`.

from labmgr.settings import load_settings
settings = load_settings()          # --home / LABMGR_HOME / .labmgr upward / per-user
settings.db_url, settings.cache_url, settings.eval.max_concurrency
"""

from labmgr.settings._config import ApiDefaults, EndpointConfig, EvalDefaults
from labmgr.settings._lab import CONFIG_TEMPLATE, InitResult, LabSource, init_lab
from labmgr.settings._settings import (
    FIGURES_DIR_NAME,
    CacheUrlSource,
    DbUrlSource,
    Settings,
    load_settings,
)

__all__ = [
    "CONFIG_TEMPLATE",
    "FIGURES_DIR_NAME",
    "ApiDefaults",
    "CacheUrlSource",
    "DbUrlSource",
    "EndpointConfig",
    "EvalDefaults",
    "InitResult",
    "LabSource",
    "Settings",
    "init_lab",
    "load_settings",
]
