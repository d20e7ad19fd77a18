"""The lab and its settings: where the lab is, what its config says, and `labmgr init`.

from labmgr.settings import load_settings
settings = load_settings()          # --home / LABMGR_HOME / .labmgr upward / per-user
settings.db_url, settings.cache_url, settings.eval.max_concurrency
"""

from labmgr.settings._config import ApiDefaults, EndpointConfig, EvalDefaults
from labmgr.settings._init import CONFIG_TEMPLATE, InitResult, init_lab
from labmgr.settings._location import LabLocation, LabSource, locate_lab, user_default_lab
from labmgr.settings._settings import (
    CACHE_FILE_NAME,
    FIGURES_DIR_NAME,
    CacheUrlSource,
    DbUrlSource,
    Settings,
    default_cache_url,
    default_db_url,
    load_settings,
    mask_db_url,
)

__all__ = [
    "CACHE_FILE_NAME",
    "CONFIG_TEMPLATE",
    "FIGURES_DIR_NAME",
    "ApiDefaults",
    "CacheUrlSource",
    "DbUrlSource",
    "EndpointConfig",
    "EvalDefaults",
    "InitResult",
    "LabLocation",
    "LabSource",
    "Settings",
    "default_cache_url",
    "default_db_url",
    "init_lab",
    "load_settings",
    "locate_lab",
    "mask_db_url",
    "user_default_lab",
]
