"""The sandbox's fine-tuning methods and results files, as a strict SDK client sees them:
reinforcement on reasoning models with a grader, DPO's beta, integrations, methods a base
model does not take, and per-step results files with periodic validation."""

from __future__ import annotations

import base64
import csv
import io
import json
import math
from typing import Any

import openai
import pytest
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI

from labmgr.sandbox.job_timeline import RESULT_COLUMNS, step_metrics

GRADER = {
    "type": "string_check",
    "name": "exact",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}


def _upload(client: OpenAI, content: bytes) -> str:
    return client.files.create(file=("train.jsonl", content), purpose="fine-tune").id


def _prompts(n: int = 12) -> bytes:
    lines = [
        json.dumps({"messages": [{"role": "user", "content": f"{i} + {i}?"}], "answer": str(2 * i)})
        for i in range(n)
    ]
    return ("\n".join(lines) + "\n").encode()


def _results(client: OpenAI, job: Any) -> list[dict[str, str]]:
    raw = client.files.content(job.result_files[0]).content
    return list(csv.DictReader(io.StringIO(base64.b64decode(raw).decode())))


def test_reinforcement_on_o4_mini_echoes_its_grader_and_trains_a_model(
    sandbox_client: OpenAI,
) -> None:
    file_id = _upload(sandbox_client, _prompts())
    job = sandbox_client.fine_tuning.jobs.create(
        model="o4-mini",
        training_file=file_id,
        suffix="sums",
        method={
            "type": "reinforcement",
            "reinforcement": {
                "grader": GRADER,
                "hyperparameters": {"reasoning_effort": "high", "n_epochs": 2},
            },
        },
    )
    assert job.model == "o4-mini-2025-04-16" and job.method is not None
    assert job.method.type == "reinforcement" and job.method.reinforcement is not None
    assert job.method.reinforcement.grader.model_dump(exclude_none=True) == GRADER
    done = wait_for_job(sandbox_client, job.id)
    assert done.status == "succeeded" and done.method and done.method.reinforcement
    hyper = done.method.reinforcement.hyperparameters
    assert hyper is not None and hyper.reasoning_effort == "high" and hyper.n_epochs == 2
    assert isinstance(hyper.eval_interval, int) and isinstance(hyper.compute_multiplier, float)
    rows = _results(sandbox_client, done)
    assert list(rows[0]) == ["step", "train_mean_reward", "valid_mean_reward"]
    rewards = [float(row["train_mean_reward"]) for row in rows]
    assert sum(rewards[-3:]) > sum(rewards[:3])
    answer = sandbox_client.chat.completions.create(
        model=done.fine_tuned_model or "", messages=[{"role": "user", "content": "1 + 1?"}]
    )
    assert answer.choices[0].message.content


@pytest.mark.parametrize(
    ("model", "method", "param"),
    [
        ("gpt-4o-mini", {"type": "reinforcement", "reinforcement": {"grader": GRADER}}, "method"),
        ("gpt-3.5-turbo", {"type": "dpo", "dpo": {}}, "method.type"),
        ("o4-mini", {"type": "supervised"}, "method.type"),
        ("o4-mini", {"type": "reinforcement", "reinforcement": {}}, "grader"),
        (
            "gpt-4o-mini",
            {"type": "supervised", "supervised": {"hyperparameters": {"beta": 0.1}}},
            "hyperparameters",
        ),
    ],
)
def test_a_method_or_option_the_base_does_not_take_is_400(
    sandbox_client: OpenAI, model: str, method: dict[str, Any], param: str
) -> None:
    file_id = _upload(sandbox_client, training_jsonl(12))
    with pytest.raises(openai.BadRequestError) as caught:
        sandbox_client.fine_tuning.jobs.create(
            model=model,
            training_file=file_id,
            method=method,  # type: ignore[arg-type]
        )
    assert param in (caught.value.param or "")


def test_dpo_beta_and_a_wandb_integration_are_echoed(sandbox_client: OpenAI) -> None:
    example = {
        "input": {"messages": [{"role": "user", "content": "Hi"}]},
        "preferred_output": [{"role": "assistant", "content": "Hello!"}],
        "non_preferred_output": [{"role": "assistant", "content": "Go away."}],
    }
    file_id = _upload(sandbox_client, (json.dumps(example) + "\n").encode() * 12)
    integration = {"type": "wandb", "wandb": {"project": "p", "entity": "e", "tags": ["a"]}}
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4.1-mini",
        training_file=file_id,
        method={"type": "dpo", "dpo": {"hyperparameters": {"beta": 0.3}}},
        integrations=[integration],  # type: ignore[list-item]
    )
    assert job.integrations is not None
    assert job.integrations[0].model_dump(exclude_none=True) == integration
    done = wait_for_job(sandbox_client, job.id)
    assert done.method and done.method.dpo and done.method.dpo.hyperparameters
    assert done.method.dpo.hyperparameters.beta == 0.3
    losses = [float(row["train_loss"]) for row in _results(sandbox_client, done)]
    assert losses[0] < 0.8  # a preference loss starts near ln 2
    with pytest.raises(openai.BadRequestError, match="integrations"):
        sandbox_client.fine_tuning.jobs.create(
            model="gpt-4.1-mini",
            training_file=file_id,
            method={"type": "dpo"},
            integrations=[{"type": "wandb", "wandb": {}}],  # type: ignore[typeddict-item]
        )


def test_results_file_has_every_step_and_validation_at_intervals(sandbox_client: OpenAI) -> None:
    train = _upload(sandbox_client, training_jsonl(40))
    valid = _upload(sandbox_client, training_jsonl(5))
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini",
        training_file=train,
        validation_file=valid,
        hyperparameters={"n_epochs": 3, "batch_size": 1},
    )
    done = wait_for_job(sandbox_client, job.id)
    rows = _results(sandbox_client, done)
    assert tuple(rows[0]) == RESULT_COLUMNS
    assert [int(row["step"]) for row in rows] == list(range(1, 121))
    evaluated = [int(row["step"]) for row in rows if row["valid_loss"]]
    assert 20 <= len(evaluated) <= 25 and evaluated[-1] == 120
    assert {40, 80, 120} <= set(evaluated)  # every epoch's end
    assert all(row["valid_mean_token_accuracy"] for row in rows if row["valid_loss"])
    first, last = rows[0], rows[-1]
    assert float(first["train_loss"]) > 1.0 > 0.5 > float(last["train_loss"])
    assert 0 <= float(first["train_accuracy"]) < float(last["train_accuracy"]) <= 1
    checkpoints = sandbox_client.fine_tuning.jobs.checkpoints.list(job.id)
    final = next(c for c in checkpoints if c.step_number == 120)
    assert final.metrics.train_loss == float(last["train_loss"])
    assert final.metrics.full_valid_loss is not None


def _job(**changes: Any) -> dict[str, Any]:
    job: dict[str, Any] = {
        "id": "ftjob-x",
        "seed": 3,
        "method": "supervised",
        "data_digest": 1234,
        "validation_file": None,
        "n_examples": 50,
        "hyperparameters": {"n_epochs": 4, "batch_size": 1, "learning_rate_multiplier": 1.0},
    }
    job.update(changes)
    return job


def _epoch_mean(series: list[dict[str, Any]], epoch: int, per_epoch: int = 50) -> float:
    chunk = series[(epoch - 1) * per_epoch : epoch * per_epoch]
    return sum(step["train_loss"] for step in chunk) / len(chunk)


def test_curves_fall_faster_with_a_higher_learning_rate_and_differ_by_seed_and_data() -> None:
    slow = step_metrics(
        _job(hyperparameters={**_job()["hyperparameters"], "learning_rate_multiplier": 0.3})
    )
    fast = step_metrics(
        _job(hyperparameters={**_job()["hyperparameters"], "learning_rate_multiplier": 3.0})
    )
    assert _epoch_mean(fast, 1) < _epoch_mean(slow, 1)
    assert all(_epoch_mean(s, 4) < _epoch_mean(s, 1) for s in (slow, fast))
    base = step_metrics(_job())
    assert base == step_metrics(_job())  # deterministic
    assert base != step_metrics(_job(seed=4))
    assert not math.isclose(
        _epoch_mean(base, 4), _epoch_mean(step_metrics(_job(data_digest=777)), 4)
    )
    with_validation = step_metrics(_job(validation_file="file-v"))
    valid = [s["valid_loss"] for s in with_validation if "valid_loss" in s]
    train = [s["train_loss"] for s in with_validation]
    assert min(valid) > min(train)  # held-out loss stays above the training loss
