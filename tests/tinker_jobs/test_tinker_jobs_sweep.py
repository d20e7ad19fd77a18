"""`finetune sweep` with ``provider: tinker``: cells over Tinker settings, tagged by level,
each a detached job; a spec mixing in OpenAI-only keys is refused at its line."""

from __future__ import annotations

from pathlib import Path

from fixtures.tinker import BASE_MODEL
from tinker_jobs.conftest import TinkerLab, chat_file, wait_until_final
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.finetuning import lab_jobs, lab_model_groups, plan_sweep, sweep

runner = CliRunner()


def _spec(lab: TinkerLab, extra: str = "") -> Path:
    chat_file(lab.files / "pirate.jsonl", n=12)
    spec = lab.files / "ranks.yaml"
    spec.write_text(
        f"base: {BASE_MODEL}\n"
        "provider: tinker\n"
        "conditions: {pirate: pirate.jsonl}\n"
        "seeds: 1\n"
        "hyperparameters: {lora_rank: [4, 8], batch_size: 6}\n"
        "suffix: '{condition}-r{lora_rank}'\n" + extra
    )
    return spec


def test_a_tinker_sweep_makes_one_job_per_cell_once(tinker_lab: TinkerLab) -> None:
    spec = _spec(tinker_lab)
    plan = plan_sweep(spec, settings=tinker_lab.settings)
    assert [(job.suffix, job.tags["lora_rank"]) for job in plan.jobs] == [
        ("pirate-r4", "4"),
        ("pirate-r8", "8"),
    ]
    result = sweep(spec, settings=tinker_lab.settings)
    assert [job.provider for job in result.created] == ["tinker", "tinker"]
    assert sweep(spec, settings=tinker_lab.settings).created == []  # nothing twice
    wait_until_final(tinker_lab.settings)
    jobs = lab_jobs(tinker_lab.settings)
    assert [(job.status, job.hyperparameters_requested["lora_rank"]) for job in jobs] == [
        ("succeeded", 4),
        ("succeeded", 8),
    ]
    groups = lab_model_groups(tinker_lab.settings, by="tag:lora_rank")
    assert groups == {
        BASE_MODEL: [BASE_MODEL],
        "4": [jobs[0].fine_tuned_model],
        "8": [jobs[1].fine_tuned_model],
    }


def test_openai_only_keys_are_refused_at_their_line(tinker_lab: TinkerLab) -> None:
    spec = _spec(tinker_lab, "method: dpo\n")
    result = runner.invoke(app, ["finetune", "sweep", str(spec), "--dry-run"])
    assert result.exit_code == 1
    assert f"{spec}:7: method: applies to OpenAI jobs only" in result.output
    spec.write_text(spec.read_text().replace("method: dpo\n", "").replace("lora_rank", "rnak"))
    result = runner.invoke(app, ["finetune", "sweep", str(spec), "--dry-run"])
    assert "unknown Tinker setting (did you mean 'rank'?)" in result.output


def test_a_bad_level_is_named_with_its_key_and_line(tinker_lab: TinkerLab) -> None:
    spec = _spec(tinker_lab)
    spec.write_text(spec.read_text().replace("[4, 8]", "[0, 8]"))
    result = runner.invoke(app, ["finetune", "sweep", str(spec), "--dry-run"])
    assert result.exit_code == 1
    expected = "lora_rank: --lora-rank 0: input should be greater than or equal to 1"
    assert f"{spec}:5: hyperparameters.{expected}" in result.output
