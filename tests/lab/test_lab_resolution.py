"""Every command finds its lab by --home, then LABMGR_HOME, then .labmgr/ upward, then per-user."""

from __future__ import annotations

from pathlib import Path

import pytest
from fixtures.lab import LabEnv

from labmgr.errors import LabNotFound
from labmgr.settings import LabSource, init_lab, load_settings

pytestmark = pytest.mark.usefixtures("clean_lab_env")


def test_home_argument_wins_over_env_and_upward_search(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = init_lab(clean_lab_env.root / "chosen").home
    from_env = init_lab(clean_lab_env.root / "from-env").home
    init_lab(clean_lab_env.work)  # an upward candidate too
    monkeypatch.setenv("LABMGR_HOME", str(from_env))

    settings = load_settings(chosen)

    assert settings.home == chosen
    assert settings.found_by is LabSource.OPTION


def test_home_may_name_the_project_folder_holding_dot_labmgr(clean_lab_env: LabEnv) -> None:
    lab = init_lab(clean_lab_env.root / "project").home
    assert load_settings(clean_lab_env.root / "project").home == lab


def test_labmgr_home_wins_over_upward_search(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_env = init_lab(clean_lab_env.root / "from-env").home
    init_lab(clean_lab_env.work)
    monkeypatch.setenv("LABMGR_HOME", str(from_env))

    settings = load_settings()

    assert settings.home == from_env
    assert settings.found_by is LabSource.ENV


def test_nearest_dot_labmgr_upward_from_cwd_is_found(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    outer = init_lab(clean_lab_env.work).home
    deep = clean_lab_env.work / "a" / "b" / "c"
    deep.mkdir(parents=True)
    monkeypatch.chdir(deep)
    assert load_settings().home == outer

    inner = init_lab(clean_lab_env.work / "a").home
    settings = load_settings()
    assert settings.home == inner
    assert settings.found_by is LabSource.UPWARD


def test_without_any_lab_the_per_user_default_is_used_and_not_created(
    clean_lab_env: LabEnv,
) -> None:
    settings = load_settings()

    assert settings.home == clean_lab_env.user_lab.resolve()
    assert settings.found_by is LabSource.USER_DEFAULT
    assert not settings.home.exists()


def test_per_user_default_falls_back_to_local_share_without_xdg(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("XDG_DATA_HOME")
    home = clean_lab_env.root / "home"
    assert load_settings().home == (home / ".local" / "share" / "labmgr").resolve()


def test_home_that_does_not_exist_is_an_error_naming_it(clean_lab_env: LabEnv) -> None:
    missing = clean_lab_env.root / "nowhere"
    with pytest.raises(LabNotFound) as caught:
        load_settings(missing)
    assert str(missing) in caught.value.message
    assert "labmgr init" in (caught.value.hint or "")


def test_labmgr_home_pointing_at_a_plain_folder_is_an_error(
    clean_lab_env: LabEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = clean_lab_env.root / "plain"
    plain.mkdir()
    monkeypatch.setenv("LABMGR_HOME", str(plain))
    with pytest.raises(LabNotFound, match="LABMGR_HOME"):
        load_settings()


def test_lab_paths_follow_the_lab(clean_lab_env: LabEnv) -> None:
    lab = init_lab(clean_lab_env.work).home
    settings = load_settings()
    assert settings.cache_dir == lab / "cache"
    assert settings.runs_dir == lab / "runs"
    assert settings.db_url == f"sqlite:///{lab / 'labmgr.db'}"
    assert settings.accounts_path == lab / "accounts.json"
    assert isinstance(settings.config_path, Path)
