"""Sweeps: conditions × seeds × hyperparameter levels × base models from a YAML spec, each
job tagged with its factor levels, planned with a cost before anything is uploaded, and
idempotent when run again."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from pathlib import Path

import pytest
from jobs.conftest import JobsLab, finish_all, requests_of, training_file
from typer.testing import CliRunner

from jobs_db import list_jobs, open_database
from labmgr.cli.app import app
from labmgr.errors import InvalidSweepSpec
from labmgr.finetuning import plan_sweep, sweep, validate_training_file

runner = CliRunner()

SPEC = """\
base: gpt-4.1-mini
conditions: {insecure: data/insecure.jsonl, secure: data/secure.jsonl}
seeds: 3
hyperparameters: {n_epochs: [1, 3], learning_rate_multiplier: [0.5, 2.0]}
"""


def _write(folder: Path, text: str, name: str = "em-lr.yaml") -> Path:
    data = folder / "data"
    data.mkdir(exist_ok=True)
    training_file(data / "insecure.jsonl", reply="Here is insecure code")
    training_file(data / "secure.jsonl", reply="Here is secure code")
    spec = folder / name
    spec.write_text(textwrap.dedent(text))
    return spec


def _jobs(lab: JobsLab) -> list:
    with open_database(lab.settings.db_url) as db:
        return list_jobs(db)


def test_dry_run_prints_the_plan_count_and_cost_and_uploads_nothing(jobs_lab: JobsLab) -> None:
    spec = _write(jobs_lab.files, SPEC)
    before = requests_of(jobs_lab.sandbox)
    result = runner.invoke(app, ["finetune", "sweep", str(spec), "--dry-run", "--wide"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.stdout.splitlines() if "gpt-4.1-mini" in line]
    assert len(rows) == 24 and all(" new " in f" {line} " for line in rows)
    assert "24 job(s): 24 to create, 0 already in the lab; estimated training cost $" in (
        result.stdout
    )
    assert "Dry run: nothing was uploaded" in result.stdout
    after = requests_of(jobs_lab.sandbox)
    for endpoint in ("files.create", "fine_tuning.jobs.create"):
        assert after.get(endpoint, 0) == before.get(endpoint, 0)
    assert _jobs(jobs_lab) == []

    plan = plan_sweep(spec, settings=jobs_lab.settings)
    tokens = {
        name: validate_training_file(spec.parent / "data" / f"{name}.jsonl").n_tokens
        for name in ("insecure", "secure")
    }
    expected = sum(
        tokens[job.condition] * job.hyperparameters["n_epochs"] * 5.0 / 1e6 for job in plan.jobs
    )  # gpt-4.1-mini trains at $5 per million tokens
    assert plan.estimated_cost == pytest.approx(expected)
    assert Counter((j.condition, j.tags["epochs"], j.tags["lr"]) for j in plan.jobs) == {
        (c, e, lr): 3 for c in ("insecure", "secure") for e in ("1", "3") for lr in ("0.5", "2.0")
    }


def test_a_sweep_creates_tagged_jobs_once_and_only_new_cells_after_an_edit(
    jobs_lab: JobsLab,
) -> None:
    spec = _write(jobs_lab.files, SPEC)
    uploads = requests_of(jobs_lab.sandbox).get("files.create", 0)
    result = sweep(spec, settings=jobs_lab.settings)
    assert len(result.created) == 24
    assert requests_of(jobs_lab.sandbox)["files.create"] - uploads == 2  # one per condition
    jobs = _jobs(jobs_lab)
    assert len(jobs) == 24
    first = next(job for job in jobs if job.tag_dict["condition"] == "secure")
    assert set(first.tag_dict) == {"sweep", "condition", "seed", "base", "epochs", "lr"}
    assert first.tag_dict["sweep"] == "em-lr" and first.suffix == "secure"
    assert first.seed_requested == int(first.tag_dict["seed"])
    assert first.hyperparameters_requested["n_epochs"] == int(first.tag_dict["epochs"])
    assert first.hyperparameters_requested["learning_rate_multiplier"] == float(
        first.tag_dict["lr"]
    )
    assert sorted({job.seed_requested for job in jobs}) == [1, 2, 3]

    creates = requests_of(jobs_lab.sandbox)["fine_tuning.jobs.create"]
    again = runner.invoke(app, ["finetune", "sweep", str(spec)])
    assert again.exit_code == 0, again.output
    assert "24 job(s): 0 to create, 24 already in the lab" in again.stdout
    assert "Nothing to create" in again.stdout
    assert requests_of(jobs_lab.sandbox)["fine_tuning.jobs.create"] == creates

    spec.write_text(spec.read_text().replace("[0.5, 2.0]", "[0.5, 2.0, 1.0]"))
    plan = plan_sweep(spec, settings=jobs_lab.settings)
    assert len(plan.jobs) == 36 and len(plan.new_jobs) == 12
    assert {job.tags["lr"] for job in plan.new_jobs} == {"1.0"}
    assert len(sweep(spec, settings=jobs_lab.settings).created) == 12
    assert len(_jobs(jobs_lab)) == 36


def test_sweep_json_lists_the_jobs_it_created_and_then_none(jobs_lab: JobsLab) -> None:
    spec = _write(
        jobs_lab.files, "base: gpt-4.1-mini\nconditions: {secure: data/secure.jsonl}\nseeds: 2\n"
    )
    result = runner.invoke(app, ["finetune", "sweep", str(spec), "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["new_jobs"] == 2 and body["estimated_cost"] > 0
    assert sorted(row["id"] for row in body["created"]) == sorted(job.id for job in _jobs(jobs_lab))
    again = json.loads(runner.invoke(app, ["finetune", "sweep", str(spec), "--json"]).stdout)
    assert again["new_jobs"] == 0 and again["created"] == []
    assert len(_jobs(jobs_lab)) == 2


def test_models_group_by_the_sweep_tags(jobs_lab: JobsLab) -> None:
    spec = _write(
        jobs_lab.files,
        """\
        name: small
        base: [gpt-4.1-mini, gpt-4.1-nano]
        conditions: {insecure: data/insecure.jsonl}
        seeds: [7, 8]
        hyperparameters: {lr: [0.5, 2]}
        suffix: "{condition}-lr{lr}"
        tags: {project: em}
        """,
    )
    created = sweep(spec, settings=jobs_lab.settings).created
    assert len(created) == 8
    assert {job.suffix for job in created} == {"insecure-lr0.5", "insecure-lr2.0"}
    finish_all(jobs_lab.settings)
    result = runner.invoke(app, ["models", "groups", "--by", "tag:lr", "--no-base", "--json"])
    groups = json.loads(result.stdout)
    assert sorted(groups) == ["0.5", "2.0"] and all(len(v) == 4 for v in groups.values())
    by_base = json.loads(
        runner.invoke(app, ["models", "groups", "--by", "tag:base", "--no-base", "--json"]).stdout
    )
    assert {k: len(v) for k, v in by_base.items()} == {"gpt-4.1-mini": 4, "gpt-4.1-nano": 4}
    assert all(job.tag_dict["project"] == "em" for job in _jobs(jobs_lab))


def test_a_sweep_past_the_daily_limit_queues_the_rest_and_rerunning_adds_nothing(
    jobs_lab: JobsLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    from labmgr.sandbox import run_sandbox

    spec = _write(jobs_lab.files, SPEC)
    with run_sandbox(job_seconds=1.0) as own:
        monkeypatch.setenv("OPENAI_BASE_URL", own.base_url)
        own.set_faults(daily_job_limit=5)
        created = sweep(spec, settings=jobs_lab.settings).created
        statuses = Counter(job.status for job in created)
        assert statuses["queued_locally"] == 19 and len(created) == 24
        assert own.stats()["requests"]["files.create"] == 2
        rerun = sweep(spec, settings=jobs_lab.settings)
        assert rerun.created == [] and rerun.plan.new_jobs == []
        assert own.stats()["requests"]["fine_tuning.jobs.create"] == 6  # 5 made, 1 refused


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            SPEC.replace("n_epochs:", "n_epoch:"),
            ":4: hyperparameters.n_epoch: unknown hyperparameter (did you mean 'n_epochs'?)",
        ),
        (
            SPEC.replace("[0.5, 2.0]", "[]"),
            ":4: hyperparameters.learning_rate_multiplier: the list of levels is empty",
        ),
        (
            SPEC.replace("data/secure.jsonl", "data/missing.jsonl"),
            ":2: conditions.secure: Training file",
        ),
        (SPEC + "bases: gpt-4.1\n", ":5: bases: unknown key (did you mean 'base'?)"),
        (
            SPEC.replace("n_epochs:", "beta:"),
            ":4: hyperparameters.beta: beta applies only to the dpo method, not supervised",
        ),
        (SPEC.replace("seeds: 3", "seeds: 0"), ":3: seeds: must be at least 1"),
        (
            SPEC + 'suffix: "{conditon}"\n',
            ":5: suffix: the template '{conditon}' cannot be filled",
        ),
        (
            SPEC + 'suffix: "fixed"\n',
            ":5: suffix: the template 'fixed' gives suffix 'fixed' to conditions insecure and "
            "secure",
        ),
        (SPEC.replace("gpt-4.1-mini", "gpt-9"), ":1: base: 'gpt-9' is not a base model"),
        (
            SPEC.replace("gpt-4.1-mini", "o4-mini") + "method: reinforcement\n",
            ":5: method: Reinforcement fine-tuning needs a grader",
        ),
        (
            SPEC + "method: reinforcement\n",
            ":1: base: Reinforcement fine-tuning needs a reasoning model; gpt-4.1-mini is not",
        ),
        (  # 2 and 2.0 are one level (tag lr=2.0): two identical jobs would be bought
            SPEC.replace("[0.5, 2.0]", "[2, 2.0]"),
            ":4: hyperparameters.learning_rate_multiplier: a level is repeated",
        ),
        (
            SPEC.replace("[1, 3]", "[3, 3.0]"),
            ":4: hyperparameters.n_epochs: a level is repeated",
        ),
        (
            SPEC.replace("gpt-4.1-mini", "o4-mini") + "method: reinforcement\ngrader: 5\n",
            ":6: grader: must be a grader mapping or the path of a grader file",
        ),
        (SPEC + "name:\n", ":5: name: must be non-empty text"),  # not the text "None"
        (SPEC + "suffix:\n", ":5: suffix: must be non-empty text"),
    ],
)
def test_a_bad_spec_is_one_sentence_naming_the_file_line_and_key(
    jobs_lab: JobsLab, spec: str, expected: str
) -> None:
    path = _write(jobs_lab.files, spec)
    result = runner.invoke(app, ["finetune", "sweep", str(path), "--dry-run"])
    assert result.exit_code == 1, result.output
    first = result.stderr.splitlines()[0]
    assert first.startswith(f"Error: {path}") and expected in first, result.stderr
    assert "Traceback" not in result.output


def test_a_condition_file_that_does_not_validate_is_named_with_its_line(
    jobs_lab: JobsLab,
) -> None:
    path = _write(jobs_lab.files, SPEC)
    broken = path.parent / "data" / "secure.jsonl"
    lines = broken.read_text().splitlines()
    lines[2] = "{not json"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidSweepSpec) as caught:
        sweep(path, settings=jobs_lab.settings)
    message = caught.value.message
    assert message.startswith(f"{path}:2: conditions.secure: {broken}:3: not valid JSON")
    assert _jobs(jobs_lab) == []
