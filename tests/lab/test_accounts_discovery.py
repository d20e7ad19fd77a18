"""Keys are found by env var name (several per endpoint), and a Credential never holds a key."""

from __future__ import annotations

import pytest

from labmgr.accounts import (
    OPENAI_DEFAULT_BASE_URL,
    OPENROUTER_BASE_URL,
    Accounts,
    Credential,
    discover_credentials,
    summarize_endpoints,
)
from labmgr.errors import MissingApiKey
from labmgr.settings import Settings, load_settings

KEY_A = "sk-test-alpha-01234"
KEY_B = "sk-test-beta-01234"


def _with_endpoint(settings: Settings) -> Settings:
    settings.config_path.write_text(
        '[endpoints.local]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "LOCAL_KEY"\n'
    )
    return load_settings()


def test_several_openai_and_openrouter_keys_are_found_in_order(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_ZED", KEY_B)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_API_KEY_ALPHA", KEY_B)
    monkeypatch.setenv("OPENROUTER_API_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_API_KEY_EMPTY", "  ")

    found = discover_credentials(lab_settings)

    assert [(c.endpoint, c.key_env) for c in found] == [
        ("openai", "OPENAI_API_KEY"),
        ("openai", "OPENAI_API_KEY_ALPHA"),
        ("openai", "OPENAI_API_KEY_ZED"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ]
    assert found[0].base_url == OPENAI_DEFAULT_BASE_URL
    assert found[3].base_url == OPENROUTER_BASE_URL


def test_openai_base_url_env_redirects_openai_keys(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8123/v1/")
    assert discover_credentials(lab_settings)[0].base_url == "http://127.0.0.1:8123/v1"


def test_configured_endpoint_uses_its_named_variable(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = _with_endpoint(lab_settings)
    assert discover_credentials(settings) == []
    assert summarize_endpoints(settings)[-1].unset_key_env == "LOCAL_KEY"

    monkeypatch.setenv("LOCAL_KEY", KEY_A)
    (credential,) = discover_credentials(settings)
    assert (credential.endpoint, credential.key_env) == ("local", "LOCAL_KEY")
    assert credential.base_url == "http://127.0.0.1:9/v1"


def test_variable_claimed_by_an_endpoint_is_not_also_an_openai_key(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    lab_settings.config_path.write_text(
        '[endpoints.vllm]\nbase_url = "http://127.0.0.1:9/v1"\nkey_env = "OPENAI_API_KEY_VLLM"\n'
    )
    monkeypatch.setenv("OPENAI_API_KEY_VLLM", KEY_A)
    found = discover_credentials(load_settings())
    assert [(c.endpoint, c.key_env) for c in found] == [("vllm", "OPENAI_API_KEY_VLLM")]


def test_credential_repr_and_fields_never_show_the_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_X", KEY_A)
    credential = Credential("openai", OPENAI_DEFAULT_BASE_URL, "OPENAI_API_KEY_X")
    resolved = credential.with_identity("org-1", "proj_1")

    for text in (repr(credential), str(resolved), repr([resolved]), str(vars(resolved))):
        assert KEY_A not in text
        assert "OPENAI_API_KEY_X" in text
    assert credential.api_key() == KEY_A
    assert KEY_A not in credential.fingerprint()
    assert len(credential.fingerprint()) == 64


def test_missing_openai_key_error_says_how_to_fix_it(
    lab_settings: Settings,
) -> None:
    with pytest.raises(MissingApiKey) as caught:
        Accounts(lab_settings).default()
    assert "OPENAI_API_KEY" in (caught.value.hint or "")
    assert "labmgr keys" in (caught.value.hint or "")


def test_unset_named_variable_is_reported_by_name(lab_settings: Settings) -> None:
    with pytest.raises(MissingApiKey, match=r"OPENAI_API_KEY_PROD.*is not set"):
        Accounts(lab_settings).credential("OPENAI_API_KEY_PROD")


def test_key_removed_after_discovery_gives_a_clear_error(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    credential = Accounts(lab_settings).default()
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(MissingApiKey, match="OPENAI_API_KEY"):
        credential.api_key()
