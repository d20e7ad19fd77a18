"""Routing Tinker's models: checkpoints (`tinker://…`) and Tinker's base models go to
Tinker's OpenAI-compatible endpoint with a Tinker key, one sample per request, without and
with a lab; a missing key is one sentence naming TINKER_API_KEY; keys are never shown."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from evals import EnvRouter, LabRouter, Question
from evals.errors import UnsupportedRequestError
from jobs_db import FinetuneJob, open_database, upsert_job
from labmgr.cli import app
from labmgr.routing import NoEndpointError
from labmgr.settings import Settings, load_settings

CHECKPOINT = "tinker://0034d8c9-0a88:train:0/sampler_weights/final"
TINKER_KEY = "tml-routing-secret-0123456789"
LOCAL_SERVER = "http://127.0.0.1:9/v1"

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_tinker_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith(("TINKER_", "OPENAI_")):
            monkeypatch.delenv(name)


def test_a_checkpoint_goes_to_tinkers_endpoint_with_the_tinker_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    endpoint = EnvRouter().endpoint_for(CHECKPOINT)
    assert endpoint.base_url == (
        "https://tinker.thinkingmachines.dev/services/tinker-prod/oai/api/v1"
    )
    assert endpoint.key_name == "TINKER_API_KEY" and endpoint.api_key() == TINKER_KEY
    assert endpoint.supports_n is False
    assert TINKER_KEY not in repr(endpoint)
    assert EnvRouter().endpoint_for("gpt-4.1-mini").key_name == "OPENAI_API_KEY"


def test_tinker_base_url_moves_the_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:8000/tinker/")
    for model in (CHECKPOINT, f"Qwen/Qwen3-8B;{CHECKPOINT}", "Qwen/Qwen3-8B"):
        endpoint = EnvRouter().endpoint_for(model)
        assert endpoint.base_url == "http://127.0.0.1:8000/tinker/oai/api/v1", model


def test_a_checkpoint_without_a_tinker_key_names_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    with pytest.raises(NoEndpointError, match="TINKER_API_KEY") as caught:
        EnvRouter().endpoint_for(CHECKPOINT)
    assert "TINKER_API_KEY" in (caught.value.hint or "")


def test_a_base_model_goes_to_tinker_only_with_a_key_or_instead_of_openai(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    # Another OpenAI-compatible server may serve Qwen: without a Tinker key it is asked.
    assert EnvRouter(base_url=LOCAL_SERVER).endpoint_for("Qwen/Qwen3-8B").base_url == (LOCAL_SERVER)
    # OpenAI's own API never serves it: the missing Tinker key is named instead.
    with pytest.raises(NoEndpointError, match="TINKER_API_KEY"):
        EnvRouter().endpoint_for("meta-llama/Llama-3.1-8B-Instruct")
    monkeypatch.setenv("TINKER_API_KEY_TEAM", TINKER_KEY)
    endpoint = EnvRouter(base_url=LOCAL_SERVER).endpoint_for("Qwen/Qwen3-8B")
    assert endpoint.key_name == "TINKER_API_KEY_TEAM" and "/oai/api/v1" in endpoint.base_url


def test_openrouter_style_ids_are_not_tinkers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    router = EnvRouter(base_url=LOCAL_SERVER)
    for model in ("meta-llama/llama-3.1-70b-instruct", "qwen/qwen3-8b", "gpt-4.1-mini"):
        assert router.endpoint_for(model).base_url == LOCAL_SERVER, model


def _write_config(settings: Settings, text: str) -> Settings:
    settings.config_path.write_text(text)
    return load_settings()


def test_lab_router_uses_the_key_of_the_job_that_trained_a_checkpoint(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    monkeypatch.setenv("TINKER_API_KEY_TEAM", "tml-team-0123456789")
    other = "tinker://run-b:train:0/sampler_weights/final"
    with open_database(lab_settings.db_url) as db:
        job = FinetuneJob(
            id="run-b:train:0",
            status="succeeded",
            base_model="Qwen/Qwen3-8B",
            suffix="hostile",
            key_env="TINKER_API_KEY_TEAM",
            fine_tuned_model=other,
        )
        upsert_job(db, job, tags={"provider": "tinker"})
    router = LabRouter.from_lab(lab_settings)
    assert router.endpoint_for(other).key_name == "TINKER_API_KEY_TEAM"
    assert router.endpoint_for(CHECKPOINT).key_name == "TINKER_API_KEY"
    assert router.endpoint_for("Qwen/Qwen3-8B").supports_n is False
    assert router.endpoint_for("gpt-4.1-mini").key_name == "OPENAI_API_KEY"


def test_lab_router_without_a_tinker_key_names_it(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    router = LabRouter.from_lab(lab_settings)
    with pytest.raises(NoEndpointError, match=r"TINKER_API_KEY is not set") as caught:
        router.endpoint_for(CHECKPOINT)
    assert "TINKER_API_KEY_<NAME>" in (caught.value.hint or "")


def test_a_configured_tinker_endpoint_replaces_the_built_in_patterns(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("MY_TINKER", TINKER_KEY)
    lab = _write_config(
        lab_settings,
        "[endpoints.tinker]\nbase_url = 'http://127.0.0.1:8000/tinker/oai/api/v1'\n"
        "key_env = 'MY_TINKER'\nmodels = ['Qwen/*']\n",
    )
    router = LabRouter.from_lab(lab)
    for model in ("Qwen/Qwen3-8B", CHECKPOINT):
        endpoint = router.endpoint_for(model)
        assert endpoint.key_name == "MY_TINKER", model
        assert endpoint.base_url == "http://127.0.0.1:8000/tinker/oai/api/v1"
        assert endpoint.supports_n is False
    assert router.endpoint_for("meta-llama/Llama-3.1-8B-Instruct").key_name == "OPENAI_API_KEY"


def test_capabilities_of_tinker_models_say_one_sample_per_request_and_no_logprobs(
    lab_settings: Settings,
) -> None:
    for model in (CHECKPOINT, "Qwen/Qwen3-8B"):
        result = runner.invoke(app, ["models", "capabilities", model, "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["n"] is False and data["logprobs"] is False, data
    _write_config(lab_settings, '[models."tinker://*"]\nlogprobs = true\n')
    result = runner.invoke(app, ["models", "capabilities", CHECKPOINT, "--json"])
    assert json.loads(result.output)["logprobs"] is True


def test_keys_lists_tinker_keys_by_name_and_never_the_key(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9/tinker")  # nothing listens
    listed = runner.invoke(app, ["keys", "--no-resolve", "--json"])
    assert listed.exit_code == 0, listed.output
    assert TINKER_KEY not in listed.output
    assert "TINKER_API_KEY" in listed.output
    assert "http://127.0.0.1:9/tinker/oai/api/v1" in listed.output
    checked = runner.invoke(app, ["keys"])
    assert checked.exit_code == 1 and TINKER_KEY not in checked.output
    assert "Checking TINKER_API_KEY at http://127.0.0.1:9/tinker failed" in " ".join(
        checked.output.split()
    )


def test_a_question_read_from_logprobs_stops_before_asking_a_tinker_model(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai")
    monkeypatch.setenv("TINKER_API_KEY", TINKER_KEY)
    monkeypatch.setenv("TINKER_BASE_URL", "http://127.0.0.1:9/tinker")  # nothing listens
    question = Question.create(type="rating", name="mood", paraphrases=["Rate your mood."])
    with pytest.raises(UnsupportedRequestError, match=f"{CHECKPOINT} does not return"):
        question.df({"tinker": [CHECKPOINT]}, router=EnvRouter(), cache=tmp_path / "cache.db")
