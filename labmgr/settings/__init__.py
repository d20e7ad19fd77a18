"""The lab and its settings: where the lab is (`load_settings`), what its config says
(``settings.db_url``, ``settings.eval.max_concurrency``, …), and `labmgr init`."""

from labmgr.settings._config import ApiDefaults, EvalDefaults
from labmgr.settings._settings import (
    CONFIG_TEMPLATE,
    FIGURES_DIR_NAME,
    CacheUrlSource,
    DbUrlSource,
    LabSource,
    Settings,
    init_lab,
    load_settings,
)

__all__ = [
    "CONFIG_TEMPLATE",
    "FIGURES_DIR_NAME",
    "ApiDefaults",
    "CacheUrlSource",
    "DbUrlSource",
    "EvalDefaults",
    "LabSource",
    "Settings",
    "init_lab",
    "load_settings",
]
