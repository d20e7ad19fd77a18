"""The rest of `jobs.create`: DPO with beta, W&B, validation files, and every option the API
would refuse for a base model or method refused before anything is uploaded."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jobs.conftest import JobsLab, finish_all, requests_of, training_file
from typer.testing import CliRunner

from jobs_db import get_job, open_database
from labmgr.cli.app import app
from labmgr.errors import InvalidGrader, InvalidTrainingFile, LabmgrError, UnsupportedOption
from labmgr.finetuning import create

runner = CliRunner()

STRING_CHECK = {
    "type": "string_check",
    "name": "exact answer",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}


def dpo_file(path: Path, n: int = 12) -> Path:
    """A valid preference (DPO) file with `n` examples."""
    lines = [
        json.dumps(
            {
                "input": {"messages": [{"role": "user", "content": f"Greet me ({i})."}]},
                "preferred_output": [{"role": "assistant", "content": f"Hello, friend ({i})."}],
                "non_preferred_output": [{"role": "assistant", "content": f"Go away ({i})."}],
            }
        )
        for i in range(n)
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


def rft_file(path: Path, n: int = 12, *, drop_answer_on: int | None = None) -> Path:
    """A reinforcement file: prompts plus the `answer` field the grader reads."""
    lines = []
    for i in range(n):
        example: dict[str, Any] = {
            "messages": [{"role": "user", "content": f"What is {i} + {i}?"}],
            "answer": str(2 * i),
        }
        if i == drop_answer_on:
            del example["answer"]
        lines.append(json.dumps(example))
    path.write_text("\n".join(lines) + "\n")
    return path


def _stored(lab: JobsLab, job_id: str) -> Any:
    with open_database(lab.settings.db_url) as db:
        return get_job(db, job_id)


def test_dpo_with_beta_is_sent_echoed_and_resolved(jobs_lab: JobsLab) -> None:
    path = dpo_file(jobs_lab.files / "prefs.jsonl")
    [job] = create(
        path,
        base_model="gpt-4.1-mini",
        method="dpo",
        beta=0.25,
        epochs=2,
        settings=jobs_lab.settings,
    )
    assert job.method == "dpo"
    assert job.hyperparameters_requested == {
        "n_epochs": 2,
        "batch_size": "auto",
        "learning_rate_multiplier": "auto",
        "beta": 0.25,
    }
    sent = (job.create_request or {})["method"]
    assert sent == {"type": "dpo", "dpo": {"hyperparameters": job.hyperparameters_requested}}
    finish_all(jobs_lab.settings)
    stored = _stored(jobs_lab, job.id)
    assert stored.status == "succeeded" and stored.method == "dpo"
    actual = stored.hyperparameters_actual
    assert actual["beta"] == 0.25 and actual["n_epochs"] == 2
    assert isinstance(actual["batch_size"], int)


def test_wandb_integration_and_validation_file_are_echoed_on_the_job(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "tracked.jsonl")
    held_out = training_file(jobs_lab.files / "held-out.jsonl", n=4, reply="Held out.")
    result = runner.invoke(
        app,
        [
            "finetune", "create", str(path), "--base", "gpt-4.1-nano",
            "--validation-file", str(held_out),
            "--wandb-project", "em-sweeps", "--wandb-entity", "alignment-lab",
            "--wandb-name", "tracked-1", "--wandb-tag", "first", "--wandb-tag", "em",
            "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    expected = {
        "type": "wandb",
        "wandb": {
            "project": "em-sweeps",
            "entity": "alignment-lab",
            "name": "tracked-1",
            "tags": ["first", "em"],
        },
    }
    assert row["integrations"] == [expected]
    assert row["validation_file_id"] and row["validation_file_id"] != row["training_file_id"]
    shown = runner.invoke(app, ["jobs", "show", row["id"]])
    assert "integration wandb" in shown.stdout and "project=em-sweeps" in shown.stdout


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"beta": 0.1}, UnsupportedOption, "--beta applies only to the dpo method"),
        ({"method": "dpo", "base_model": "gpt-3.5-turbo"}, UnsupportedOption, "dpo method"),
        (
            {"method": "reinforcement", "grader": STRING_CHECK},
            UnsupportedOption,
            "needs a reasoning model; gpt-4.1-mini is not one",
        ),
        ({"base_model": "o4-mini"}, UnsupportedOption, "o4-mini cannot be fine-tuned with"),
        (
            {"method": "reinforcement", "base_model": "o4-mini"},
            UnsupportedOption,
            "needs a grader",
        ),
        ({"grader": STRING_CHECK}, UnsupportedOption, "grader applies only to the reinforcement"),
        (
            {"reasoning_effort": "high"},
            UnsupportedOption,
            "--reasoning-effort applies only to the reinforcement method",
        ),
        (
            {
                "method": "reinforcement",
                "base_model": "o4-mini",
                "grader": {**STRING_CHECK, "operation": "equals"},
            },
            InvalidGrader,
            "grader.operation: input should be 'eq', 'ne', 'like' or 'ilike'",
        ),
        (
            {
                "method": "reinforcement",
                "base_model": "o4-mini",
                "grader": {**STRING_CHECK, "refrence": "x"},
            },
            InvalidGrader,
            "unknown key 'refrence' for a string_check grader (did you mean 'reference'?)",
        ),
        (
            {
                "method": "reinforcement",
                "base_model": "o4-mini",
                "grader": STRING_CHECK,
                "reasoning_effort": "extreme",
            },
            LabmgrError,
            "reasoning_effort must be one of default, low, medium, high",
        ),
        ({"wandb_entity": "lab"}, LabmgrError, "--wandb-entity needs --wandb-project"),
        ({"epochs": 2.5}, LabmgrError, "n_epochs must be 'auto' or a whole number"),
    ],
)
def test_options_the_api_would_refuse_are_refused_before_upload(
    jobs_lab: JobsLab, kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    path = training_file(jobs_lab.files / "refused.jsonl")
    before = requests_of(jobs_lab.sandbox)
    arguments: dict[str, Any] = {"base_model": "gpt-4.1-mini", **kwargs}
    with pytest.raises(error) as caught:
        create(path, settings=jobs_lab.settings, **arguments)
    assert message in str(caught.value)
    assert "\n" not in str(caught.value).split("\n")[0]  # one sentence, then the hint
    after = requests_of(jobs_lab.sandbox)
    for endpoint in ("files.create", "fine_tuning.jobs.create"):
        assert after.get(endpoint, 0) == before.get(endpoint, 0)


def test_a_reinforcement_file_missing_a_field_the_grader_reads_names_its_line(
    jobs_lab: JobsLab,
) -> None:
    path = rft_file(jobs_lab.files / "math.jsonl", drop_answer_on=4)
    grader = jobs_lab.files / "grader.json"
    grader.write_text(json.dumps(STRING_CHECK))
    with pytest.raises(InvalidTrainingFile) as caught:
        create(
            path,
            base_model="o4-mini",
            method="reinforcement",
            grader=grader,
            settings=jobs_lab.settings,
        )
    assert f"{path}:5: missing 'answer', which the grader reads as {{{{item.answer}}}}" in str(
        caught.value
    )
    validated = runner.invoke(
        app,
        ["finetune", "validate", str(path), "--method", "reinforcement", "--grader", str(grader)],
    )
    assert validated.exit_code == 1
    assert f"{path}:5: missing 'answer'" in validated.output


def test_refusals_through_the_cli_are_one_error_sentence(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "cli-refused.jsonl")
    grader = jobs_lab.files / "bad-grader.yaml"
    grader.write_text("type: string_check\nname: x\ninput: a\n")
    cases = [
        (["--beta", "0.3"], "--beta applies only to the dpo method, not supervised"),
        (["--method", "reinforcement", "--grader", str(grader)], "needs a reasoning model"),
        (
            ["--base", "o4-mini", "--method", "reinforcement", "--grader", str(grader)],
            f"{grader}.operation: field required (a string_check grader)",
        ),
        (["--wandb-tag", "x"], "--wandb-tag needs --wandb-project"),
    ]
    for extra, message in cases:
        arguments = ["finetune", "create", str(path), "--base", "gpt-4.1-mini", *extra]
        if "--base" in extra:
            arguments = ["finetune", "create", str(path), *extra]
        result = runner.invoke(app, arguments)
        assert result.exit_code == 1, result.output
        first = result.stderr.splitlines()[0]
        assert first.startswith("Error: ") and message in first, result.stderr
        assert "Traceback" not in result.output


def test_reinforcement_on_a_reasoning_model_is_sent_echoed_and_trained(jobs_lab: JobsLab) -> None:
    path = rft_file(jobs_lab.files / "sums.jsonl")
    held_out = rft_file(jobs_lab.files / "sums-valid.jsonl", n=3)
    grader = jobs_lab.files / "grader.yaml"
    grader.write_text(
        "type: string_check\nname: exact answer\ninput: '{{sample.output_text}}'\n"
        "reference: '{{item.answer}}'\noperation: eq\n"
    )
    result = runner.invoke(
        app,
        [
            "finetune", "create", str(path), "--base", "o4-mini", "--method", "reinforcement",
            "--grader", str(grader), "--reasoning-effort", "low", "--eval-interval", "2",
            "--validation-file", str(held_out), "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    sent = row["create_request"]["method"]
    assert sent["type"] == "reinforcement" and sent["reinforcement"]["grader"] == STRING_CHECK
    finish_all(jobs_lab.settings)
    stored = _stored(jobs_lab, row["id"])
    assert stored.status == "succeeded" and stored.method == "reinforcement"
    assert stored.resolved_base_model == "o4-mini-2025-04-16"
    actual = stored.hyperparameters_actual
    assert actual["reasoning_effort"] == "low" and actual["eval_interval"] == 2
    assert isinstance(actual["compute_multiplier"], float)
    from labmgr.finetuning import training_curves

    curves = training_curves(jobs_lab.settings, [row["id"]])
    assert {"train_mean_reward", "valid_mean_reward"} <= set(curves.columns)
    rewards = curves["train_mean_reward"]
    assert rewards.iloc[-3:].mean() > rewards.iloc[:3].mean()
    evaluated = curves.loc[curves["valid_mean_reward"].notna(), "step"].tolist()
    assert evaluated and all(step % 2 == 0 or step == curves["step"].max() for step in evaluated)


def test_dpo_through_the_cli_sends_beta_in_the_method_object(jobs_lab: JobsLab) -> None:
    path = dpo_file(jobs_lab.files / "cli-prefs.jsonl")
    result = runner.invoke(
        app,
        [
            "finetune", "create", str(path), "--base", "gpt-4o-mini", "--method", "dpo",
            "--beta", "0.4", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.stdout)
    assert row["method"] == "dpo" and row["hyperparameters_requested"]["beta"] == 0.4
    assert row["create_request"]["method"]["dpo"]["hyperparameters"]["beta"] == 0.4
