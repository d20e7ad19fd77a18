"""Routing by pattern: a configured endpoint claims models (answers and judges alike), then the
jobs database's owners, then a shared fine-tune's key (found once, remembered), then the
default key. A second sandbox on another port stands in for another provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI

from evals import LabRouter, Question, RunSettings
from labmgr.sandbox import SandboxHandle, run_sandbox
from labmgr.settings import Settings, load_settings

QUIET = RunSettings(max_concurrency=8, request_timeout=10, progress=False)


@pytest.fixture
def other_provider() -> Iterator[SandboxHandle]:
    with run_sandbox() as handle:
        yield handle


def _chat_models(sandbox: SandboxHandle) -> dict[str, int]:
    """Samples served per model on a sandbox."""
    return {m: int(row["choices"]) for m, row in sandbox.stats()["models"].items()}


def _lab_with_other_provider(
    lab_settings: Settings,
    default: SandboxHandle,
    other: SandboxHandle,
    monkeypatch: pytest.MonkeyPatch,
    patterns: str,
) -> Settings:
    default.reset()
    other.reset()
    monkeypatch.setenv("OPENAI_BASE_URL", default.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-default")
    monkeypatch.setenv("OTHER_PROVIDER_KEY", "sk-test-other")
    lab_settings.config_path.write_text(
        f"[endpoints.other]\nbase_url = '{other.base_url}'\nkey_env = 'OTHER_PROVIDER_KEY'\n"
        f"models = {patterns}\n"
    )
    return load_settings()


def test_answers_go_to_the_default_key_and_judges_to_the_endpoint_claiming_them(
    sandbox: SandboxHandle,
    other_provider: SandboxHandle,
    lab_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lab = _lab_with_other_provider(
        lab_settings, sandbox, other_provider, monkeypatch, '["gpt-4o*", "meta-llama/*"]'
    )
    q = Question.create(
        type="free_form",
        name="colours",
        paraphrases=["Name a colour.", "Pick a colour."],
        samples_per_paraphrase=3,
        max_tokens=12,
        judges={
            "fit": {
                "type": "rating_judge",
                "model": "gpt-4o-mini",
                "paraphrases": ["Rate 0-100 how well this names a colour: {answer}"],
            }
        },
    )
    df = q.df({"base": ["gpt-4.1-mini"]}, lab=lab, settings=QUIET)
    assert df["error"].isna().all() and df["fit"].notna().all()
    assert _chat_models(sandbox) == {"gpt-4.1-mini": 6}
    judged = df["answer"].nunique()
    assert _chat_models(other_provider) == {"gpt-4o-mini": judged}
    assert sandbox.stats()["requests"]["chat.completions"] == 2  # n on OpenAI
    assert other_provider.stats()["requests"]["chat.completions"] == judged


def test_a_claimed_answer_model_is_asked_without_n_unless_its_endpoint_allows_it(
    sandbox: SandboxHandle,
    other_provider: SandboxHandle,
    lab_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lab = _lab_with_other_provider(
        lab_settings, sandbox, other_provider, monkeypatch, '["gpt-4o*"]'
    )
    q = Question.create(
        type="free_form", name="c", paraphrases=["Hi."], samples_per_paraphrase=3, max_tokens=5
    )
    df = q.df({"a": ["gpt-4o-mini"], "b": ["gpt-4.1-mini"]}, lab=lab, settings=QUIET)
    assert df["error"].isna().all()
    assert other_provider.stats()["requests"]["chat.completions"] == 3
    assert sandbox.stats()["requests"]["chat.completions"] == 1
    assert _chat_models(sandbox) == {"gpt-4.1-mini": 3}
    router = LabRouter.from_lab(lab)
    assert router.endpoint_for("gpt-4o-2024-08-06").base_url == other_provider.base_url
    assert router.endpoint_for("gpt-4.1").base_url == sandbox.base_url


def test_the_first_matching_endpoint_wins(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-default")
    monkeypatch.setenv("A_KEY", "sk-a")
    monkeypatch.setenv("B_KEY", "sk-b")
    lab_settings.config_path.write_text(
        "[endpoints.b]\nbase_url = 'http://127.0.0.1:9/v1'\nkey_env = 'B_KEY'\n"
        "models = ['my-vllm-7b']\n\n"
        "[endpoints.a]\nbase_url = 'http://127.0.0.1:8/v1'\nkey_env = 'A_KEY'\n"
        "models = ['my-vllm-*']\nn = true\n"
    )
    router = LabRouter.from_lab(load_settings())
    assert router.endpoint_for("my-vllm-7b").key_name == "B_KEY"
    seventy = router.endpoint_for("my-vllm-70b")
    assert seventy.key_name == "A_KEY" and seventy.supports_n
    assert not router.endpoint_for("my-vllm-7b").supports_n
    assert router.endpoint_for("gpt-4.1").key_name == "OPENAI_API_KEY"


def test_a_claiming_endpoint_without_its_key_names_the_variable(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-default")
    lab_settings.config_path.write_text(
        "[endpoints.local]\nbase_url = 'http://127.0.0.1:9/v1'\nkey_env = 'LOCAL_KEY'\n"
        "models = ['my-vllm-*']\n"
    )
    q = Question.create(type="free_form", name="c", paraphrases=["Hi."], max_tokens=5)
    with pytest.warns(UserWarning, match="model my-vllm-7b was not asked: no key for my-vllm-7b"):
        df = q.df({"a": ["my-vllm-7b"]}, lab=load_settings(), settings=QUIET)
    assert "LOCAL_KEY" in str(df["error"].iloc[0])


def _fine_tune_of_beta(sandbox: SandboxHandle) -> str:
    beta = OpenAI(base_url=sandbox.base_url, api_key="sk-test-beta", max_retries=0)
    file_id = beta.files.create(file=("t.jsonl", training_jsonl()), purpose="fine-tune").id
    job = beta.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id, suffix="shared")
    model = wait_for_job(beta, job.id).fine_tuned_model
    assert model is not None
    return model


def test_a_fine_tune_not_in_the_database_is_found_on_the_key_that_sees_it_and_remembered(
    sandbox_multi_account: SandboxHandle,
    lab_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox = sandbox_multi_account
    model = _fine_tune_of_beta(sandbox)
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    monkeypatch.setenv("OPENAI_API_KEY_BETA", "sk-test-beta")
    sandbox.reset()
    lab = load_settings()
    q = Question.create(type="free_form", name="c", paraphrases=["Hi."], max_tokens=5)
    df = q.df({"shared": [model]}, lab=lab, settings=QUIET)
    assert df["error"].isna().all()
    # Asked: alpha (not found), beta (found); then the check before buying.
    assert sandbox.stats()["requests"]["models.retrieve"] == 3
    remembered = json.loads(lab.shared_models_path.read_text())["models"][model]
    assert remembered["key_env"] == "OPENAI_API_KEY_BETA"
    assert "sk-test" not in lab.shared_models_path.read_text()

    sandbox.reset()
    more = q.model_copy(update={"samples_per_paraphrase": 2})
    more.df({"shared": [model]}, lab=load_settings(), settings=QUIET)  # a new lab context
    assert sandbox.stats()["requests"]["models.retrieve"] == 1  # the check only
    assert LabRouter.from_lab(lab).endpoint_for(model).key_name == "OPENAI_API_KEY_BETA"


def test_a_remembered_key_that_changed_is_looked_up_again(
    sandbox_multi_account: SandboxHandle,
    lab_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sandbox = sandbox_multi_account
    model = _fine_tune_of_beta(sandbox)
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    monkeypatch.setenv("OPENAI_API_KEY_BETA", "sk-test-beta")
    assert LabRouter.from_lab(load_settings()).endpoint_for(model).key_name == "OPENAI_API_KEY_BETA"
    monkeypatch.setenv("OPENAI_API_KEY_BETA", "sk-test-alpha-two")  # no longer sees it
    monkeypatch.setenv("OPENAI_API_KEY_ZETA", "sk-test-beta")
    found = LabRouter.from_lab(load_settings()).endpoint_for(model)
    assert found.key_name == "OPENAI_API_KEY_ZETA"
    memory: dict[str, Any] = json.loads(lab_settings.shared_models_path.read_text())
    assert memory["models"][model]["key_env"] == "OPENAI_API_KEY_ZETA"


def test_a_run_over_more_endpoints_than_kept_clients_closes_none_in_use(
    sandbox: SandboxHandle,
    other_provider: SandboxHandle,
    lab_settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One client kept: the second endpoint's client pushes out the first while one fetch
    # still sends through both.
    monkeypatch.setattr("evals.runner._transport.KEPT.keep", 1)
    lab = _lab_with_other_provider(
        lab_settings, sandbox, other_provider, monkeypatch, '["gpt-4o*"]'
    )
    q = Question.create(
        type="free_form",
        name="two-endpoints",
        paraphrases=["Name a colour.", "Name a fruit.", "Name a tree."],
        samples_per_paraphrase=4,
        max_tokens=12,
    )
    for _ in range(2):
        df = q.df({"mixed": ["gpt-4.1-mini", "gpt-4o-mini"]}, lab=lab, settings=QUIET)
        assert df["error"].isna().all(), df["error"].dropna().unique()
        q = Question.create(
            type="free_form",
            name="two-endpoints",
            paraphrases=["Name a bird.", "Name a river.", "Name a city."],
            samples_per_paraphrase=4,
            max_tokens=12,
        )
    assert _chat_models(sandbox) == {"gpt-4.1-mini": 24}
    assert _chat_models(other_provider) == {"gpt-4o-mini": 24}
