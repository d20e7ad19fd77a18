"""Where the lab's response cache lives: `LABMGR_CACHE_URL` beats `[lab] cache_url` beats the
SQLite file in the cache folder; a URL the cache cannot use is named with its origin."""

from __future__ import annotations

import pytest
from fixtures.lab import LabEnv

from evals.runner import lab_context
from labmgr.errors import ConfigError
from labmgr.settings import CacheUrlSource, init_lab, load_settings


def test_cache_url_env_beats_config_beats_the_sqlite_file_in_the_cache_folder(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = init_lab(clean_lab_env.work).home
    settings = load_settings()
    assert settings.cache_url_source is CacheUrlSource.DEFAULT
    assert settings.cache_url == f"sqlite:///{home / 'cache' / 'responses.sqlite'}"
    assert lab_context(settings).cache.path == home / "cache" / "responses.sqlite"

    config = home / "config.toml"
    url = "postgresql+psycopg://me:secret@db.example/lab"
    config.write_text(config.read_text().replace("[lab]\n", f'[lab]\ncache_url = "{url}"\n'))
    settings = load_settings()
    assert (settings.cache_url, settings.cache_url_source) == (url, CacheUrlSource.CONFIG)
    assert "secret" not in settings.masked_cache_url and "***" in settings.masked_cache_url
    cache = lab_context(settings).cache  # nothing is opened until the cache is used
    assert cache.path is None and "secret" not in repr(cache)

    monkeypatch.setenv("LABMGR_CACHE_URL", f"sqlite:///{clean_lab_env.root / 'shared.sqlite'}")
    settings = load_settings()
    assert settings.cache_url_source is CacheUrlSource.ENV
    assert lab_context(settings).cache.path == clean_lab_env.root / "shared.sqlite"


@pytest.mark.parametrize("url", ["not a url", "mysql://me@db/lab"])
def test_a_cache_url_the_cache_cannot_use_names_where_it_came_from(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    init_lab(clean_lab_env.work)
    monkeypatch.setenv("LABMGR_CACHE_URL", url)
    with pytest.raises(ConfigError, match=r"LABMGR_CACHE_URL.*SQLite or PostgreSQL"):
        load_settings()
