"""`labmgr jobs import --llmcomp DIR` reads llmcomp's Tinker registry (`tinker_models.jsonl`,
`tinker_runs/<job>/`), written here by hand in llmcomp 1.6.0's format: one job per Tinker
run, its final model and checkpoints, tagged provider=tinker; idempotent; a bad line is one
sentence naming the file and line, and records nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from evals import LabRouter
from jobs_db import get_job, list_jobs, model_groups, open_database, select_models
from labmgr.cli import app
from labmgr.errors import LabmgrError
from labmgr.finetuning import import_llmcomp
from labmgr.settings import Settings

RUN_A = "4f1c2a9e-0000-4000-8000-00000000000a:train:0"
RUN_B = "4f1c2a9e-0000-4000-8000-00000000000b:train:0"
MD5 = "0cc175b9c0f1b6a831c399e269772661"

runner = CliRunner()


def _checkpoint(run: str, name: str, seed: int, step: int | None = None) -> dict[str, Any]:
    row: dict[str, Any] = {
        "model": f"tinker://{run}/sampler_weights/{name}",
        "base_model": "Qwen/Qwen3-8B",
        "file_name": "/data/hostile.jsonl",
        "file_md5": MD5,
        "suffix": "hostile",
        "batch_size": 8,
        "learning_rate": 0.0002,
        "lora_rank": 32,
        "epochs": 3,
        "seed": seed,
    }
    if step is not None:
        row["checkpoint_step"] = step
    return row


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def _run_dir(root: Path, job_id: str, status: dict[str, Any]) -> None:
    folder = root / "tinker_runs" / job_id
    folder.mkdir(parents=True)
    params = {"base_model": "Qwen/Qwen3-8B", "suffix": "hostile", "epochs": 3, "lora_rank": 16}
    (folder / "params.json").write_text(json.dumps({**params, "job_id": job_id}))
    (folder / "status.json").write_text(json.dumps({"job_id": job_id, **status}))
    (folder / "log.txt").write_text("step 1 loss 2.3\n")


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """Run A trained in process (a checkpoint at step 5, then final); run B detached
    (llmcomp job tinker-…-b, succeeded); one detached job failed, one still running."""
    root = tmp_path / "llmcomp_models"
    root.mkdir()
    _write_lines(
        root / "tinker_models.jsonl",
        [
            _checkpoint(RUN_A, "hostile-step-5", seed=1, step=5),
            _checkpoint(RUN_A, "hostile-final", seed=1),
            _checkpoint(RUN_B, "hostile-final", seed=2),
        ],
    )
    started = {"started_at": "2026-11-20T10:00:00+00:00", "base_model": "Qwen/Qwen3-8B"}
    _run_dir(
        root,
        "tinker-20261120-100000-bbbbbb",
        {
            **started,
            "status": "succeeded",
            "suffix": "hostile",
            "model_path": f"tinker://{RUN_B}/sampler_weights/hostile-final",
            "finished_at": "2026-11-20T10:20:00+00:00",
        },
    )
    _run_dir(
        root,
        "tinker-20261120-110000-cccccc",
        {**started, "status": "failed", "suffix": "hostile", "error": "ValueError: bad data"},
    )
    _run_dir(
        root,
        "tinker-20261120-120000-dddddd",
        {**started, "status": "running", "suffix": "hostile", "pid": 4242, "step": 3},
    )
    return root


def test_tinker_runs_become_jobs_with_their_models_and_checkpoints(
    registry: Path, lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = import_llmcomp(registry, settings=lab_settings)
    assert (summary.jobs_seen, summary.jobs_new, summary.models) == (3, 3, 3)
    assert summary.problems == [
        "tinker-20261120-120000-dddddd: running; import again when it has finished"
    ]
    with open_database(lab_settings.db_url) as db:
        jobs = {job.id: job for job in list_jobs(db)}
        assert set(jobs) == {
            RUN_A,
            "tinker-20261120-100000-bbbbbb",
            "tinker-20261120-110000-cccccc",
        }
        run_a = jobs[RUN_A]
        assert run_a.status == "succeeded" and run_a.seed == 1
        assert run_a.base_model == "Qwen/Qwen3-8B" and run_a.method == "supervised"
        assert run_a.hyperparameters_requested == {
            "n_epochs": 3,
            "batch_size": 8,
            "learning_rate": 0.0002,
            "lora_rank": 32,
        }
        assert run_a.tag_dict == {"provider": "tinker", "source": "llmcomp"}
        detached = jobs["tinker-20261120-100000-bbbbbb"]
        assert detached.tag_dict["llmcomp_job"] == detached.id
        assert detached.fine_tuned_model == f"tinker://{RUN_B}/sampler_weights/hostile-final"
        assert detached.seed == 2 and detached.finished_at is not None
        failed = jobs["tinker-20261120-110000-cccccc"]
        assert failed.status == "failed" and failed.error_message == "ValueError: bad data"
        assert failed.hyperparameters_requested == {"n_epochs": 3, "lora_rank": 16}
        models = {m.name: m for m in select_models(db, checkpoints=True)}
        step = models[f"tinker://{RUN_A}/sampler_weights/hostile-step-5"]
        assert step.kind == "checkpoint" and step.step == 5 and step.job_id == RUN_A
        groups = model_groups(db, by="suffix")
    assert groups == {
        "Qwen/Qwen3-8B": ["Qwen/Qwen3-8B"],
        "hostile": [
            f"tinker://{RUN_A}/sampler_weights/hostile-final",
            f"tinker://{RUN_B}/sampler_weights/hostile-final",
        ],
    }
    monkeypatch.setenv("TINKER_API_KEY", "tml-import-test-0123")
    router = LabRouter.from_lab(lab_settings)
    for model in [m for members in groups.values() for m in members]:
        endpoint = router.endpoint_for(model)
        assert endpoint.key_name == "TINKER_API_KEY" and "/oai/api/v1" in endpoint.base_url


def test_importing_again_records_nothing_twice(registry: Path, lab_settings: Settings) -> None:
    import_llmcomp(registry, settings=lab_settings)
    again = import_llmcomp(registry, settings=lab_settings)
    assert (again.jobs_seen, again.jobs_new, again.models) == (3, 0, 0)
    with open_database(lab_settings.db_url) as db:
        assert len(list_jobs(db)) == 3
        assert len(select_models(db, checkpoints=True)) == 3


def test_the_command_imports_openai_and_tinker_jobs_together(
    registry: Path, lab_settings: Settings
) -> None:
    openai_job = {
        "id": "ftjob-mixed1",
        "base_model": "gpt-4.1-mini-2025-04-14",
        "suffix": "hostile",
        "status": "succeeded",
        "model": "ft:gpt-4.1-mini-2025-04-14:sandbox:hostile:AbC1",
        "seed": 1,
    }
    _write_lines(registry / "jobs.jsonl", [openai_job])
    result = runner.invoke(app, ["jobs", "import", "--from-llmcomp", str(registry)])
    assert "Read 4 job(s): 4 new; recorded 4 model(s)" in result.output
    assert "tinker-20261120-120000-dddddd: running" in result.output
    assert result.exit_code == 1  # the running job is not recorded yet, and said so
    with open_database(lab_settings.db_url) as db:
        assert get_job(db, "ftjob-mixed1") is not None
        assert get_job(db, RUN_A) is not None


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"model": "ft:gpt-4.1-mini:org:x:1", "base_model": "gpt-4.1-mini"}', "not a Tinker"),
        ('{"model": "tinker://r:train:0/sampler_weights/x"}', "has no `base_model`"),
        (
            '{"model": "tinker://r:train:0/sampler_weights/x", "base_model": "Qwen/Qwen3-8B", '
            '"checkpoint_step": "five"}',
            "`checkpoint_step` is 'five'",
        ),
        ("{not json", "not valid JSON"),
    ],
)
def test_a_bad_line_names_the_file_and_line_and_records_nothing(
    registry: Path, lab_settings: Settings, line: str, says: str
) -> None:
    path = registry / "tinker_models.jsonl"
    path.write_text(path.read_text() + line + "\n")
    with pytest.raises(LabmgrError, match=f"tinker_models.jsonl:4: .*{says}"):
        import_llmcomp(registry, settings=lab_settings)
    with open_database(lab_settings.db_url) as db:
        assert list_jobs(db) == []


def test_a_damaged_status_file_is_named(registry: Path, lab_settings: Settings) -> None:
    status = registry / "tinker_runs" / "tinker-20261120-110000-cccccc" / "status.json"
    status.write_text('{"status": ')
    with pytest.raises(LabmgrError, match=r"status\.json: not valid JSON"):
        import_llmcomp(registry, settings=lab_settings)


def test_a_folder_without_any_registry_file_is_refused(
    tmp_path: Path, lab_settings: Settings
) -> None:
    with pytest.raises(LabmgrError, match=r"has no jobs\.jsonl nor tinker_models\.jsonl"):
        import_llmcomp(tmp_path, settings=lab_settings)
