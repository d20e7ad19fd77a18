"""`labmgr init` never clobbers; the config file is typed and its errors name file, line, field."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from fixtures.lab import LabEnv

from labmgr.errors import ConfigError
from labmgr.pricing import price_for
from labmgr.settings import CONFIG_TEMPLATE, DbUrlSource, init_lab, load_settings

pytestmark = pytest.mark.usefixtures("clean_lab_env")


def _write_config(lab: Path, text: str) -> Path:
    path = lab / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_init_creates_config_cache_and_runs(clean_lab_env: LabEnv) -> None:
    result = init_lab(clean_lab_env.work)
    assert result.home == clean_lab_env.work / ".labmgr"
    assert (result.home / "config.toml").read_text() == CONFIG_TEMPLATE
    assert (result.home / "cache").is_dir() and (result.home / "runs").is_dir()
    assert len(result.created) == 4 and not result.existing


def test_init_twice_keeps_an_edited_config(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    edited = _write_config(home, "[eval]\nmax_concurrency = 7\n")

    again = init_lab(clean_lab_env.work)

    assert edited.read_text() == "[eval]\nmax_concurrency = 7\n"
    assert not again.created
    assert load_settings().eval.max_concurrency == 7


def test_init_restores_missing_folders_only(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    (home / "runs").rmdir()
    again = init_lab(clean_lab_env.work)
    assert again.created == [home / "runs"]


def test_template_is_valid_toml_matching_the_defaults(clean_lab_env: LabEnv) -> None:
    parsed = tomllib.loads(CONFIG_TEMPLATE)
    init_lab(clean_lab_env.work)
    settings = load_settings()
    assert parsed["eval"]["max_concurrency"] == settings.eval.max_concurrency
    assert parsed["eval"]["max_retries"] == settings.eval.max_retries
    assert parsed["api"]["timeout"] == settings.api.timeout
    assert parsed["api"]["max_retries"] == settings.api.max_retries


def test_toml_syntax_error_names_file_and_line(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    path = _write_config(home, "[eval]\nmax_concurrency = 3\n[api\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"{path}:3:" in caught.value.message


def test_bad_value_names_file_line_and_field(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    path = _write_config(home, "[lab]\nruns_dir = 'r'\n\n[eval]\nmax_concurrency = 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"{path}:5: eval.max_concurrency:" in caught.value.message


def test_unknown_setting_is_an_error(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    path = _write_config(home, "[eval]\nmax_concurency = 5\n")
    with pytest.raises(ConfigError, match="unknown setting") as caught:
        load_settings()
    assert f"{path}:2: eval.max_concurency" in caught.value.message


def test_endpoint_key_env_must_be_a_name_and_the_value_is_not_echoed(
    clean_lab_env: LabEnv,
) -> None:
    home = init_lab(clean_lab_env.work).home
    _write_config(
        home, '[endpoints.local]\nbase_url = "http://127.0.0.1:1/v1"\nkey_env = "sk-test-alpha"\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "endpoints.local.key_env" in caught.value.message
    assert "sk-test-alpha" not in str(caught.value)


def test_builtin_endpoint_names_are_reserved(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    _write_config(home, '[endpoints.openai]\nbase_url = "http://x/v1"\nkey_env = "K"\n')
    with pytest.raises(ConfigError, match="built in"):
        load_settings()


def test_db_url_env_beats_config_beats_default(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = init_lab(clean_lab_env.work).home
    assert load_settings().db_url_source is DbUrlSource.DEFAULT

    _write_config(home, '[lab]\ndb_url = "postgresql+psycopg://me:secret@db/lab"\n')
    settings = load_settings()
    assert settings.db_url_source is DbUrlSource.CONFIG
    assert "secret" not in settings.masked_db_url and "***" in settings.masked_db_url

    monkeypatch.setenv("LABMGR_DB_URL", "sqlite:///other.db")
    settings = load_settings()
    assert (settings.db_url, settings.db_url_source) == ("sqlite:///other.db", DbUrlSource.ENV)


def test_cache_dir_env_beats_config_beats_default(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = init_lab(clean_lab_env.work).home
    assert load_settings().cache_dir == home / "cache"
    _write_config(home, '[lab]\ncache_dir = "answers"\n')
    assert load_settings().cache_dir == home / "answers"
    monkeypatch.setenv("LABMGR_CACHE_DIR", str(clean_lab_env.root / "shared-cache"))
    assert load_settings().cache_dir == clean_lab_env.root / "shared-cache"


def test_malformed_db_url_is_a_config_error(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABMGR_DB_URL", "not a url")
    with pytest.raises(ConfigError, match="LABMGR_DB_URL"):
        load_settings()


def test_relative_dirs_and_endpoints_and_prices_are_loaded(clean_lab_env: LabEnv) -> None:
    home = init_lab(clean_lab_env.work).home
    _write_config(
        home,
        '[lab]\ncache_dir = "../shared-cache"\n'
        '[endpoints.local]\nbase_url = "http://127.0.0.1:9/v1/"\nkey_env = "LOCAL_KEY"\n'
        '[prices."my-model*"]\ninput = 1\noutput = 2\n',
    )
    settings = load_settings()
    assert settings.cache_dir == clean_lab_env.work / "shared-cache"
    assert settings.endpoints["local"].base_url == "http://127.0.0.1:9/v1"
    assert price_for("my-model-v2", settings.prices) is not None
