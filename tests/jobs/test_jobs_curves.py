"""Training curves: read once from each finished job's results file, stored in the database,
returned as a DataFrame and drawn per job and per group (one colour per group, one line per
seed)."""

from __future__ import annotations

import base64
import math

import pytest
from jobs.conftest import JobsLab, finish_all, requests_of, training_file
from matplotlib.colors import to_hex
from sqlalchemy import text
from typer.testing import CliRunner

from jobs_db import get_job, job_curves, open_database
from labmgr.cli.app import app
from labmgr.finetuning import (
    NoCurves,
    create,
    group_curves_figure,
    job_curves_figure,
    training_curves,
    update,
)
from labmgr.finetuning.curves.frame import ResultsFileError, parse_results_file

runner = CliRunner()
PNG = b"\x89PNG\r\n\x1a\n"
CSV = (
    "step,train_loss,train_accuracy,valid_loss,valid_mean_token_accuracy\n"
    "1,1.52347,0.4,,\n2,0.57719,0.55,0.81,0.5\n3,0.3,0.7,,\n"
)


def test_results_files_are_read_plain_or_base64_with_empty_cells_as_none() -> None:
    for data in (CSV.encode(), base64.b64encode(CSV.encode())):
        header, rows = parse_results_file(data)
        assert header[:2] == ["step", "train_loss"] and len(header) == 5
        assert rows == [
            [1, 1.52347, 0.4, None, None],
            [2, 0.57719, 0.55, 0.81, 0.5],
            [3, 0.3, 0.7, None, None],
        ]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"loss,step\n1,2\n", "first column must be 'step'"),
        (b"step,train_loss\n1,abc\n", "line 2, column train_loss: 'abc' is not a number"),
        (b"step,train_loss\n1\n", "line 2 has 1 cells for 2 columns"),
        (b"", "first column must be 'step'"),
    ],
)
def test_a_results_file_that_is_not_a_metrics_csv_says_why(data: bytes, message: str) -> None:
    with pytest.raises(ResultsFileError, match=message):
        parse_results_file(data)


def _total_steps(lab: JobsLab, job_id: str) -> int:
    with open_database(lab.settings.db_url) as db:
        job = get_job(db, job_id)
    assert job is not None and job.hyperparameters_actual
    hyper = job.hyperparameters_actual
    return math.ceil(12 / hyper["batch_size"]) * hyper["n_epochs"]


def test_a_finished_job_has_per_step_curves_read_once(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "curved.jsonl")
    held_out = training_file(jobs_lab.files / "curved-valid.jsonl", n=4, reply="Held.")
    [job] = create(
        path,
        base_model="gpt-4.1-mini",
        validation_file=held_out,
        epochs=3,
        batch_size=1,
        settings=jobs_lab.settings,
    )
    finish_all(jobs_lab.settings)
    frame = training_curves(jobs_lab.settings, [job.id])
    total = _total_steps(jobs_lab, job.id)
    assert frame["step"].tolist() == list(range(1, total + 1))
    assert list(frame.columns[:6]) == ["group", "job_id", "model", "suffix", "seed", "step"]
    assert {"train_loss", "train_accuracy", "valid_loss", "valid_mean_token_accuracy"} <= set(
        frame.columns
    )
    losses = frame["train_loss"]
    assert losses.iloc[:5].mean() > losses.iloc[-5:].mean() > 0
    valid = frame["valid_loss"].notna()
    assert 1 < valid.sum() < total and bool(valid.iloc[-1])  # periodic, and at the end
    assert frame["train_accuracy"].between(0, 1).all()

    before = requests_of(jobs_lab.sandbox).get("files.content", 0)
    assert update(settings=jobs_lab.settings).requests == 0  # read once, never again
    assert requests_of(jobs_lab.sandbox).get("files.content", 0) == before


def test_curves_missing_from_a_finished_job_are_read_by_the_next_update(
    jobs_lab: JobsLab,
) -> None:
    path = training_file(jobs_lab.files / "lost.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    finish_all(jobs_lab.settings)
    with open_database(jobs_lab.settings.db_url) as db, db.engine.begin() as connection:
        connection.execute(text("DELETE FROM training_curves"))
    with pytest.raises(NoCurves, match="No training curves are stored"):
        training_curves(jobs_lab.settings, [job.id])
    summary = update(settings=jobs_lab.settings)
    assert summary.curves == 1 and summary.requests == 1 and summary.checked == []
    with open_database(jobs_lab.settings.db_url) as db:
        assert list(job_curves(db)) == [job.id]


def test_a_job_figure_draws_loss_from_zero_and_accuracy_on_zero_to_one(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "drawn.jsonl")
    held_out = training_file(jobs_lab.files / "drawn-valid.jsonl", n=4, reply="Held.")
    [job] = create(
        path, base_model="gpt-4.1-mini", validation_file=held_out, settings=jobs_lab.settings
    )
    finish_all(jobs_lab.settings)
    figure = job_curves_figure(training_curves(jobs_lab.settings, [job.id]), "a job")
    loss, accuracy = figure.axes[:2]
    assert loss.get_ylabel() == "loss" and loss.get_ylim()[0] == 0
    assert accuracy.get_ylim() == (0, 1) and accuracy.get_xlabel() == "step"
    assert {line.get_label() for line in loss.get_lines()} == {"train_loss", "valid_loss"}

    out = jobs_lab.files / "figures" / "job.png"
    result = runner.invoke(app, ["jobs", "show", job.id, "--plot", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert f"Training curves written to {out}" in result.stdout
    assert out.read_bytes().startswith(PNG) and out.stat().st_size > 10_000


def test_group_curves_overlay_seeds_one_colour_per_group(jobs_lab: JobsLab) -> None:
    for condition in ("calm", "angry"):
        path = training_file(jobs_lab.files / f"{condition}.jsonl", reply=condition)
        create(
            path, base_model="gpt-4.1-mini", suffix=condition, seeds=2, settings=jobs_lab.settings
        )
    finish_all(jobs_lab.settings)
    frame = training_curves(jobs_lab.settings, by="suffix")
    assert sorted(frame.groupby("group")["job_id"].nunique().items()) == [
        ("angry", 2),
        ("calm", 2),
    ]
    figure = group_curves_figure(frame, "by suffix")
    lines = [line for line in figure.axes[0].get_lines() if len(line.get_xdata()) > 1]
    assert len(lines) == 4  # one line per seed
    assert len({to_hex(line.get_color()) for line in lines}) == 2  # one colour per group

    out = jobs_lab.files / "groups.png"
    result = runner.invoke(app, ["models", "curves", "--by", "suffix", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "angry (2), calm (2)" in result.stdout
    assert out.read_bytes().startswith(PNG)
    as_csv = runner.invoke(app, ["models", "curves", "--by", "suffix", "--csv"])
    assert as_csv.stdout.splitlines()[0].startswith("group,job_id,model,suffix,seed,step,")


def test_plotting_a_job_without_curves_is_one_clear_error(jobs_lab: JobsLab) -> None:
    path = training_file(jobs_lab.files / "young.jsonl")
    [job] = create(path, base_model="gpt-4.1-mini", settings=jobs_lab.settings)
    result = runner.invoke(app, ["jobs", "show", job.id, "--plot"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: No training curves are stored for these jobs")
    assert "jobs update" in result.stderr


def test_a_run_grouped_from_the_database_keeps_its_models_curves_for_the_report(
    jobs_lab: JobsLab,
) -> None:
    from evals import Question, groups_from_database, run_questions

    for condition in ("calm", "angry"):
        path = training_file(jobs_lab.files / f"run-{condition}.jsonl", reply=condition)
        create(
            path, base_model="gpt-4.1-mini", suffix=condition, seeds=2, settings=jobs_lab.settings
        )
    finish_all(jobs_lab.settings)
    groups, facts = groups_from_database(
        jobs_lab.settings.db_url, by="suffix", base_model="gpt-4.1-mini"
    )
    question = Question.create(
        type="free_form", name="mood", paraphrases=["How do you feel?"], max_tokens=8
    )
    run = run_questions(
        [question],
        groups,
        models=facts,
        lab=jobs_lab.settings,
        out=jobs_lab.files / "run",
        samples=1,
        progress=False,
    )
    curves = run.training_curves()
    assert curves is not None
    assert sorted(curves.groupby("group")["job_id"].nunique().items()) == [
        ("angry", 2),
        ("calm", 2),
    ]
    assert {"step", "train_loss", "train_accuracy"} <= set(curves.columns)
    page = (run.path / "report.html").read_text(encoding="utf-8")
    section = page.split("<h3>Training curves</h3>", 1)[1].split("</figure>", 1)[0]
    assert "data:image/png;base64," in section and "angry (2), calm (2)" in section


def test_a_run_of_base_models_alone_has_no_curves(jobs_lab: JobsLab) -> None:
    from evals import Question, run_questions

    question = Question.create(type="free_form", name="hi", paraphrases=["Hi?"], max_tokens=4)
    run = run_questions(
        [question],
        {"base": ["gpt-4.1-mini"]},
        lab=jobs_lab.settings,
        out=jobs_lab.files / "base-run",
        samples=1,
        progress=False,
    )
    assert run.training_curves() is None
    assert "Training curves" not in (run.path / "report.html").read_text(encoding="utf-8")
