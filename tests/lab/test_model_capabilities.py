"""The capability table: families, fine-tunes of them, and a lab's `[models]` overrides."""

from __future__ import annotations

from pathlib import Path

import pytest

from labmgr.capabilities import CapabilityOverride, capabilities_for, family_of
from labmgr.errors import ConfigError
from labmgr.settings import Settings, load_settings


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("o4-mini", "o4-mini"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("ft:o4-mini-2025-04-16:org:x:abc", "o4-mini"),
        ("ft:o4-mini-2025-04-16:org:x:abc:ckpt-step-10", "o4-mini"),
        ("openai/gpt-5", "gpt-5"),
        ("gpt-5-mini-2025-08-07", "gpt-5-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("ft:gpt-4.1-mini:org:o4:1", "gpt-4.1-mini"),
        ("gpt-5-chat-latest", "gpt-5-chat-latest"),
        ("gpt-50x", None),
        ("meta-llama/llama-3.1-70b", None),
    ],
)
def test_models_belong_to_the_longest_family_they_extend(model: str, family: str | None) -> None:
    assert family_of(model) == family


def test_reasoning_models_and_their_fine_tunes_sample_at_one_without_logprobs() -> None:
    for model in ("gpt-5-mini", "o4-mini", "ft:o4-mini-2025-04-16:org:x:1", "openai/gpt-5"):
        found = capabilities_for(model).capabilities
        assert found.reasoning and not found.temperature and not found.logprobs, model
        assert found.token_limit == "max_completion_tokens", model
        assert found.default_reasoning_effort in found.reasoning_efforts, model
    chat = capabilities_for("ft:gpt-4.1-mini-2025-04-14:org:x:1").capabilities
    assert not chat.reasoning and chat.temperature and chat.logprobs
    assert chat.token_limit == "max_tokens" and chat.reasoning_efforts == ()


def test_efforts_differ_between_families() -> None:
    assert "minimal" in capabilities_for("gpt-5-nano").capabilities.reasoning_efforts
    assert "minimal" not in capabilities_for("o4-mini").capabilities.reasoning_efforts
    assert capabilities_for("o1-mini").capabilities.reasoning_efforts == ()


def test_the_source_says_table_default_or_config() -> None:
    assert "built-in table (o4-mini" in capabilities_for("ft:o4-mini:org:x:1").source
    assert "not in the table" in capabilities_for("my-vllm-qwen").source
    override = {"my-vllm-*": CapabilityOverride(logprobs=False, n=False)}
    found = capabilities_for("my-vllm-qwen", override)
    assert found.source.startswith('config [models."my-vllm-*"] over the built-in default')
    assert not found.capabilities.logprobs and not found.capabilities.n
    assert found.capabilities.temperature, "fields not given keep the table's value"


def test_an_exact_id_wins_over_a_glob_and_fine_tunes_inherit_their_base_override() -> None:
    overrides = {
        "gpt-4.1-*": CapabilityOverride(n=False),
        "gpt-4.1-mini": CapabilityOverride(logprobs=False),
    }
    assert not capabilities_for("gpt-4.1-mini", overrides).capabilities.logprobs
    assert capabilities_for("gpt-4.1-mini", overrides).capabilities.n
    tuned = capabilities_for("ft:gpt-4.1-mini:org:x:1", overrides)
    assert tuned.override == "gpt-4.1-mini" and not tuned.capabilities.logprobs


def test_new_efforts_drop_a_default_they_do_not_contain() -> None:
    found = capabilities_for(
        "gpt-5", {"gpt-5": CapabilityOverride(reasoning_efforts=("low", "high"))}
    ).capabilities
    assert found.reasoning_efforts == ("low", "high")
    assert found.default_reasoning_effort is None


def _lab_with(lab_settings: Settings, text: str) -> Path:
    lab_settings.config_path.write_text(text)
    return lab_settings.config_path


def test_a_lab_overrides_capabilities_in_its_config(lab_settings: Settings) -> None:
    _lab_with(lab_settings, '[models."my-vllm-*"]\nlogprobs = true\nn = false\n')
    settings = load_settings()
    found = capabilities_for("my-vllm-7b", settings.models)
    assert found.capabilities.logprobs and not found.capabilities.n


def test_a_misspelt_capability_names_the_file_line_and_field(lab_settings: Settings) -> None:
    path = _lab_with(lab_settings, '[models."x-*"]\nlogprob = true\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert f"{path}:2: models.x-*.logprob: unknown setting" in caught.value.message


def test_an_unknown_effort_is_refused_with_the_valid_ones(lab_settings: Settings) -> None:
    _lab_with(lab_settings, '[models."x-*"]\nreasoning_efforts = ["low", "hgh"]\n')
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "models.x-*.reasoning_efforts.1" in caught.value.message
    assert "'high'" in caught.value.message


def test_endpoint_model_patterns_are_read_in_file_order(lab_settings: Settings) -> None:
    _lab_with(
        lab_settings,
        "[endpoints.zed]\nbase_url = 'http://127.0.0.1:1/v1'\nkey_env = 'ZED_KEY'\n"
        "models = ['meta-llama/*']\n\n"
        "[endpoints.alpha]\nbase_url = 'http://127.0.0.1:2/v1'\nkey_env = 'ALPHA_KEY'\n"
        "models = ['my-vllm-*']\nn = true\n",
    )
    settings = load_settings()
    assert list(settings.endpoints) == ["zed", "alpha"]
    assert settings.endpoints["zed"].models == ["meta-llama/*"]
    assert settings.endpoints["alpha"].n and not settings.endpoints["zed"].n
