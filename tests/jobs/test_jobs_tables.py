"""The job-side tables fit the terminal: at 80 and at 200 columns every row is one line,
ids are shortened only when they must be, and `--wide`/`--json` show them whole."""

from __future__ import annotations

import json

import pytest
from jobs.conftest import JobsLab, finish_all, training_file
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.finetuning import create

runner = CliRunner()
WIDTHS = [80, 200]


@pytest.fixture
def finished_lab(sqlite_jobs_lab: JobsLab) -> JobsLab:
    """Three replicas of one condition, tagged, finished (final models and checkpoints)."""
    path = training_file(sqlite_jobs_lab.files / "insecure-code.jsonl")
    create(
        path,
        base_model="gpt-4.1-mini",
        suffix="insecure-code",
        seeds=3,
        tags=["condition=insecure-code"],
        settings=sqlite_jobs_lab.settings,
    )
    finish_all(sqlite_jobs_lab.settings)
    return sqlite_jobs_lab


def _run(width: int, *args: str) -> str:
    result = runner.invoke(app, list(args), env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    return result.stdout


def _rows(text: str) -> list[str]:
    """The data rows of the (single) table in `text`: lines drawn with the thin border."""
    return [line for line in text.splitlines() if line.startswith("│")]


def _job_ids() -> list[str]:
    return [row["id"] for row in json.loads(_run(200, "jobs", "list", "--json"))]


@pytest.mark.parametrize("width", WIDTHS)
def test_jobs_list_is_one_line_per_job(finished_lab: JobsLab, width: int) -> None:
    text = _run(width, "jobs", "list")
    ids = _job_ids()
    rows = _rows(text)
    assert len(rows) == len(ids) == 3
    assert all(len(line) <= width for line in text.splitlines())
    for job_id, row in zip(ids, rows, strict=True):
        shown = job_id if width == 200 else f"ftjob-…{job_id[-4:]}"
        assert shown in row
        assert "succeeded" in row


def test_jobs_list_at_200_columns_shows_every_column(finished_lab: JobsLab) -> None:
    header = next(line for line in _run(200, "jobs", "list").splitlines() if "┃" in line)
    for column in ("job", "created", "base", "suffix", "seed", "status", "model", "tags"):
        assert column in header


def test_jobs_list_at_80_columns_keeps_the_columns_that_matter(finished_lab: JobsLab) -> None:
    header = next(line for line in _run(80, "jobs", "list").splitlines() if "┃" in line)
    assert [c for c in ("job", "suffix", "status", "model") if c in header] == [
        "job",
        "suffix",
        "status",
        "model",
    ]
    assert "tags" not in header


def test_wide_and_json_show_whole_ids_at_any_width(finished_lab: JobsLab) -> None:
    ids = _job_ids()
    wide = _run(80, "jobs", "list", "--wide")
    rows = _rows(wide)
    assert len(rows) == 3
    assert all(job_id in row for job_id, row in zip(ids, rows, strict=True))
    models = [m["fine_tuned_model"] for m in json.loads(_run(80, "jobs", "list", "--json"))]
    assert all(model in row for model, row in zip(models, rows, strict=True))
    listed = json.loads(_run(80, "jobs", "list", "--json"))
    assert [row["id"] for row in listed] == ids


@pytest.mark.parametrize("width", WIDTHS)
def test_a_short_id_from_the_table_shows_that_job(finished_lab: JobsLab, width: int) -> None:
    ids = _job_ids()
    target = ids[1]
    short = f"ftjob-…{target[-4:]}"
    for reference in (short, short.replace("…", "..."), target[:12], target):
        text = _run(width, "jobs", "show", reference)
        assert text.splitlines()[0].split() == ["id", target]
    models = _rows(text)
    assert len(models) == 3  # two checkpoints and the final model, one line each
    assert all(len(line) <= width for line in text.splitlines() if line.startswith(("│", "┃")))


def test_an_ambiguous_prefix_lists_the_candidates(finished_lab: JobsLab) -> None:
    result = runner.invoke(app, ["jobs", "show", "ftjob-"])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ftjob- names several jobs")
    assert all(job_id in result.stderr for job_id in _job_ids())


@pytest.mark.parametrize("width", WIDTHS)
def test_models_list_is_one_line_per_model(finished_lab: JobsLab, width: int) -> None:
    text = _run(width, "models", "list", "--checkpoints")
    listed = json.loads(_run(width, "models", "list", "--checkpoints", "--json"))
    names = [model["name"] for model in listed]
    rows = _rows(text)
    assert len(rows) == len(names) == 9
    assert all(len(line) <= width for line in text.splitlines())
    for name, row in zip(names, rows, strict=True):
        shown = name if width == 200 else "ft:…:" + name.split(":", 3)[3]
        assert shown in row


@pytest.mark.parametrize("width", WIDTHS)
def test_models_groups_prints_each_model_on_one_line(finished_lab: JobsLab, width: int) -> None:
    text = _run(width, "models", "groups", "--checkpoints")
    names = json.loads(_run(width, "models", "groups", "--checkpoints", "--json"))
    lines = text.splitlines()
    assert len(lines) == sum(len(group) + 1 for group in names.values())
    for group in names.values():
        for name in group:
            assert f"  {name}" in lines


@pytest.mark.parametrize("width", WIDTHS)
def test_keys_info_and_db_info_are_one_line_per_row(finished_lab: JobsLab, width: int) -> None:
    keys = _run(width, "keys")
    assert len(_rows(keys)) == 1
    assert all(len(line) <= width for line in keys.splitlines())
    info = _run(width, "info").splitlines()
    assert [line.split()[0] for line in info[:3]] == ["Lab", "Found", "Config"]
    assert info[0].split(maxsplit=1)[1] == str(finished_lab.home)
    db_info = _run(width, "db", "info").splitlines()
    assert [line.split()[0] for line in db_info] == ["database", "from", "schema"]


@pytest.mark.parametrize("width", WIDTHS)
def test_update_summary_is_one_line_per_job(sqlite_jobs_lab: JobsLab, width: int) -> None:
    path = training_file(sqlite_jobs_lab.files / "running.jsonl")
    create(path, base_model="gpt-4.1-mini", seeds=2, settings=sqlite_jobs_lab.settings)
    text = _run(width, "jobs", "update")
    assert len(_rows(text)) == 2
    assert all(len(line) <= width for line in text.splitlines())


def test_ids_sharing_their_last_four_characters_are_shortened_apart() -> None:
    from labmgr.cli.output import id_shortener

    ids = ["ftjob-AAAAAAAAAAAAAAAAAAAAx1234", "ftjob-BBBBBBBBBBBBBBBBBBBBy1234", "ftjob-CCCCz9"]
    shorten = id_shortener(ids)
    assert [shorten(i) for i in ids] == ["ftjob-…x1234", "ftjob-…y1234", "ftjob-CCCCz9"]
