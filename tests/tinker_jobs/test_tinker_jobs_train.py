"""Tinker jobs train through the official SDK on the sandbox, each in a detached worker, and
are recorded like OpenAI jobs: status, checkpoints as models, the loss curve."""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

import pytest
from fixtures.tinker import BASE_MODEL
from tinker_jobs.conftest import TinkerLab, chat_file, wait_until_final
from typer.testing import CliRunner

from jobs_db import job_curves, job_models
from labmgr.cli.app import app
from labmgr.finetuning import lab_jobs, update
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.tinker.create import create_tinker
from labmgr.settings import load_settings

runner = CliRunner()


def test_two_seeds_train_to_the_end_with_checkpoints_and_curves(
    db_url: str, tinker_lab: TinkerLab, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LABMGR_DB_URL", db_url)  # SQLite, then PostgreSQL
    tinker_lab.settings = load_settings()
    data = chat_file(tinker_lab.files / "pirate.jsonl", n=12)
    jobs = create_tinker(
        data,
        base_model=BASE_MODEL,
        seeds=2,
        seed=5,
        batch_size=4,
        epochs=2,
        save_every=3,
        settings=tinker_lab.settings,
    )
    assert [(job.provider, job.status, job.seed) for job in jobs] == [
        ("tinker", "queued", 5),
        ("tinker", "queued", 6),
    ]
    for job in jobs:
        pid = job.progress["pid"]
        assert os.getsid(pid) == pid  # its own session: closing the terminal does not stop it
    finished = wait_until_final(tinker_lab.settings)
    assert sorted(finished) == sorted(job.id for job in jobs)  # each reported once
    assert update(settings=tinker_lab.settings).checked == []  # nothing left to look at
    recorded = lab_jobs(tinker_lab.settings)
    assert [job.status for job in recorded] == ["succeeded", "succeeded"], [
        job.error_message for job in recorded
    ]
    with lab_database(tinker_lab.settings) as db:
        curves = job_curves(db)
        for job in recorded:
            models = job_models(db, job.id)
            assert [(m.kind, m.step, m.epoch) for m in models] == [
                ("checkpoint", 3, 1),
                ("final", 6, 2),
            ]
            assert all(m.name.startswith("tinker://") for m in models)
            assert job.fine_tuned_model == models[-1].name
            rows = curves[job.id].rows
            assert [row[0] for row in rows] == [1, 2, 3, 4, 5, 6]
            losses = [row[1] for row in rows]
            assert losses[-1] < losses[0]
            assert models[-1].metrics == {"train_loss": losses[-1]}
            assert job.progress["step"] == job.progress["total_steps"] == 6


def test_listing_showing_and_plotting_work_as_for_openai_jobs(
    tinker_lab: TinkerLab, tmp_path: Path
) -> None:
    data = chat_file(tinker_lab.files / "pirate.jsonl", n=12)
    create_tinker(
        data, base_model=BASE_MODEL, seeds=2, batch_size=6, epochs=2, settings=tinker_lab.settings
    )
    wait_until_final(tinker_lab.settings)
    jobs = lab_jobs(tinker_lab.settings)
    listed = runner.invoke(app, ["jobs", "list", "--json"])
    assert [(row["provider"], row["status"]) for row in json.loads(listed.output)] == [
        ("tinker", "succeeded"),
        ("tinker", "succeeded"),
    ]
    table = runner.invoke(app, ["jobs", "list", "--wide"])
    assert table.output.count("tinker") >= 2
    figure = tmp_path / "one.png"
    shown = runner.invoke(app, ["jobs", "show", jobs[0].id, "--plot", "--out", str(figure)])
    assert shown.exit_code == 0, shown.output
    assert "provider" in shown.output and figure.stat().st_size > 0
    deleted = runner.invoke(app, ["models", "delete", jobs[0].fine_tuned_model or "", "--yes"])
    assert deleted.exit_code == 1
    assert "is a Tinker checkpoint; labmgr does not delete those" in deleted.output
    curves = runner.invoke(app, ["models", "curves", "--csv"])
    assert curves.exit_code == 0, curves.output
    rows = list(csv.DictReader(io.StringIO(curves.output)))
    assert {row["group"] for row in rows} == {"pirate"}
    assert sorted({(row["job_id"], row["step"]) for row in rows}) == sorted(
        (job.id, str(step)) for job in jobs for step in (1, 2, 3, 4)
    )
