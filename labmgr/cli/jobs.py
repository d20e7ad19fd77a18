"""`labmgr jobs …`: refresh, list, show and import fine-tuning jobs."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, ItemColumns, print_fitted, print_items
from labmgr.cli.output import (
    BASE,
    JOB,
    JSON,
    SUFFIX,
    TAGS,
    WIDE,
    cell,
    cli_settings,
    id_shortener,
    job_row,
    print_fields,
    print_json,
    short_model,
    terminal,
    when,
)
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from rich.console import Console

    from jobs_db import FinetuneJob, Model
    from labmgr.finetuning import JobDetails, UpdateSummary

app = CommandGroup(help="Refresh, list, show and import fine-tuning jobs.", no_args_is_help=True)


def _print_summary(console: Console, summary: UpdateSummary, wide: bool) -> None:
    for sent in summary.submitted:
        console.print(f"Sent {sent.queued_id} ({sent.suffix or 'no suffix'}) as {sent.job_id}")
    if summary.queued:
        first = min((q.not_before for q in summary.queued if q.not_before), default=None)
        console.print(
            f"{len(summary.queued)} job(s) still queued locally for a daily slot; the first "
            f"can go from {when(first)} UTC (run `labmgr jobs update` then)."
        )
    if not summary.checked and not summary.unchecked:
        if not summary.queued and not summary.submitted:
            console.print("No job is waiting: every recorded job is final.")
        return
    if summary.checked:
        shorten = id_shortener(job.job_id for job in summary.checked)
        columns = [
            Column("job", 10, shorten),
            Column("suffix", 8),
            Column("status", 9),
            Column("phase / model", 5, short_model),
            Column("ETA (training, +safety)", 4),
        ]
        rows = []
        for job in summary.checked:
            detail = job.fine_tuned_model or job.error or job.phase or ""
            known = job.estimated_finish and job.real_eta
            eta = f"{when(job.estimated_finish)}, {job.real_eta:%H:%M}" if known else ""
            status = job.status + (" (new)" if job.newly_finished else "")
            rows.append([job.job_id, job.suffix or "", status, detail, eta])
        print_fitted(console, columns, rows, title="Fine-tuning jobs checked", wide=wide)
    finished = Counter(job.status for job in summary.checked)
    console.print(  # two short lines: the console leaves long ones to the terminal
        f"running {len(summary.running)}, succeeded {finished['succeeded']}, "
        f"failed {finished['failed']}, cancelled {finished['cancelled']}, "
        f"newly finished {len(summary.newly_finished)}"
    )
    curves = f", training curves stored {summary.curves}" if summary.curves else ""
    console.print(f"{summary.requests} API requests{curves}")
    if summary.unchecked:
        console.print(f"Could not check {len(summary.unchecked)} job(s):")
        for left in summary.unchecked:
            console.print(f"  {left.job_id} ({left.suffix or 'no suffix'}): {left.reason}")


@app.command("update", short_help="Refresh every job that is not final yet.")
def update(
    ctx: typer.Context,
    watch: float | None = typer.Option(
        None, metavar="<seconds>", help="Repeat every SECONDS until no job is running (Ctrl-C)."
    ),
    concurrency: int = typer.Option(16, metavar="<n>", min=1, help="Jobs refreshed at once."),
    wide: bool = WIDE,
    as_json: bool = JSON,
) -> None:
    """Refresh every job that is not final yet (concurrently), and print a summary; exit
    status 1 when a job could not be checked (the summary says why)."""
    from labmgr.finetuning import update as update_jobs

    settings = cli_settings(ctx)
    if watch is not None and watch <= 0:
        raise typer.BadParameter("must be a positive number of seconds", param_hint="--watch")
    console = terminal()
    try:
        while True:
            summary = update_jobs(settings=settings, concurrency=concurrency)
            if as_json:
                finished = [job.job_id for job in summary.newly_finished]
                extra = {"newly_finished": finished, "still_running": summary.still_running}
                print_json({**summary.model_dump(mode="json"), **extra})
            else:
                _print_summary(console, summary, wide)
            if watch is None or not summary.still_running:
                break
            time.sleep(watch)
    except KeyboardInterrupt:
        console.print("Stopped; every job refreshed so far is recorded.")
        raise typer.Exit(130) from None
    if summary.unchecked:
        first = summary.unchecked[0]
        raise LabmgrError(
            f"{len(summary.unchecked)} of {len(summary.unchecked) + len(summary.checked)} "
            f"unfinished jobs could not be checked ({first.job_id}: {first.reason.rstrip('.')}).",
            hint="Fix the key or endpoint named above and run `labmgr jobs update` again.",
        )


def _pairs(data: Mapping[str, object] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (data or {}).items())


@app.command("list", short_help="List recorded jobs, oldest first.")
def list_jobs(
    ctx: typer.Context,
    status: Annotated[
        list[str] | None,
        typer.Option(metavar="<status>", help="Only jobs with this status (repeatable)."),
    ] = None,
    base: str | None = BASE,
    suffix: str | None = SUFFIX,
    tag: Annotated[list[str] | None, TAGS] = None,
    wide: bool = WIDE,
    as_json: bool = JSON,
) -> None:
    """List recorded jobs, oldest first (ids shortened to fit: `jobs show` takes them); jobs
    the daily limit held back show as queued locally with the time they can go."""
    from labmgr.finetuning import lab_jobs

    jobs = lab_jobs(
        cli_settings(ctx), status=status or None, base_model=base, suffix=suffix, tags=tag or None
    )
    if as_json:
        print_json([job_row(job) for job in jobs])
        return
    columns: ItemColumns[FinetuneJob] = [
        (Column("job", 10, id_shortener(job.id for job in jobs)), lambda job: job.id),
        (Column("created", 3), lambda job: when(job.created_at)),
        (Column("provider", 2), lambda job: job.provider or "openai"),
        (Column("base", 2), lambda job: job.base_model or job.resolved_base_model or ""),
        (Column("suffix", 8), lambda job: job.suffix or ""),
        (Column("seed", 1, justify="right"), lambda job: cell(job.seed)),
        (Column("status", 9, lambda text: text.partition(",")[0]), _status),
        (Column("model", 5, short_model), lambda job: job.fine_tuned_model or ""),
        (Column("tags", 4), lambda job: _pairs(job.tag_dict)),
    ]
    print_items(terminal(), jobs, columns, title=f"{len(jobs)} fine-tuning job(s)", wide=wide)


def _status(job: FinetuneJob) -> str:
    """The status, with when a locally queued job can go, or how far a Tinker job is."""
    from labmgr.finetuning.tinker.control import progress_text

    if job.status == "queued_locally":
        return f"queued locally, from {when(job.not_before)}"
    progress = progress_text(job) if job.status in ("queued", "running") else ""
    return f"{job.status}, {progress}" if progress else job.status


def _print_details(details: JobDetails, wide: bool) -> None:
    job, row = details.job, job_row(details.job)
    row["provider"] = job.provider or "openai"
    row["status"] = _status(job)
    row["log"] = (job.progress or {}).get("log")
    fields = [(name, row.get(name)) for name in (
        "id", "provider", "status", "phase", "base_model", "resolved_base_model", "suffix",
        "method", "seed", "key_env", "organization_id", "project_id", "training_file_id",
        "validation_file_id", "trained_tokens", "estimated_finish", "created_at",
        "finished_at", "refreshed_at", "not_before", "error_message", "fine_tuned_model",
        "result_file_id", "log",
    )]  # fmt: skip
    fields.insert(8, ("hyperparameters_requested", _pairs(job.hyperparameters_requested)))
    fields.insert(9, ("hyperparameters_actual", _pairs(job.hyperparameters_actual)))
    fields.append(("tags", _pairs(job.tag_dict)))
    for integration in job.integrations or []:
        settings = integration.get(integration.get("type", ""), {})
        fields.append((f"integration {integration.get('type')}", _pairs(settings)))
    console = terminal()
    print_fields(console, [(name, str(value)) for name, value in fields if value not in (None, "")])
    columns: ItemColumns[Model] = [
        (Column("model", 10, short_model), lambda model: model.name),
        (Column("kind", 9), lambda model: model.kind),
        (Column("step", 5, justify="right"), lambda model: cell(model.step)),
        (Column("epoch", 4, justify="right"), lambda model: cell(model.epoch)),
        (Column("train_loss", 3, justify="right"), _train_loss),
    ]
    print_items(console, details.models, columns, title="Models", wide=wide)
    console.print(f"Events ({len(details.events)}, oldest first):")
    for event in details.events:
        console.print(f"  {when(event.created_at)} {event.level or ''} {event.message or ''}")


def _train_loss(model: Model) -> str:
    return cell((model.metrics or {}).get("train_loss"), "{:.4f}")


@app.command("show", short_help="One job with its events and models; --plot its curves.")
def show(
    ctx: typer.Context,
    job: Annotated[str, JOB],
    wide: bool = WIDE,
    as_json: bool = JSON,
    plot: bool = typer.Option(False, "--plot", help="Also write the job's training curves."),
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="<file>",
            help="Where --plot writes (.png, .pdf, .svg; default curves-<job>.png here).",
        ),
    ] = None,
) -> None:
    """One job with its events, final model and checkpoints (and, with --plot, a figure of
    its training and validation curves)."""
    from labmgr.finetuning import job_curves_figure, job_details, save_figure, training_curves

    settings = cli_settings(ctx)
    details = job_details(settings, job)
    figure = None
    if plot:
        job_id = details.job.id
        frame = training_curves(settings, [job_id])
        row = frame.iloc[0]
        title = f"{job_id} · {row['suffix'] or 'no suffix'} · seed {row['seed']}"
        figure = save_figure(job_curves_figure(frame, title), out or Path(f"curves-{job_id}.png"))
    if as_json:
        print_json(
            {
                "job": job_row(details.job),
                "events": [event.model_dump(mode="json") for event in details.events],
                "models": [model.model_dump(mode="json") for model in details.models],
                "figure": str(figure) if figure else None,
            }
        )
        return
    _print_details(details, wide)
    if figure is not None:
        terminal().print(f"Training curves written to {figure}")


@app.command("import", short_help="Record jobs from the API or an llmcomp registry.")
def import_jobs(
    ctx: typer.Context,
    from_api: bool = typer.Option(False, "--from-api", help="Every configured key's jobs."),
    llmcomp: Annotated[
        Path | None,
        typer.Option(
            "--llmcomp",
            "--from-llmcomp",
            metavar="<dir>",
            help="An llmcomp data_dir (jobs.jsonl, files.jsonl, tinker_models.jsonl, "
            "tinker_runs/).",
        ),
    ] = None,
    checkpoints: bool = typer.Option(
        True, "--checkpoints/--no-checkpoints", help="Also record checkpoints (API import)."
    ),
    as_json: bool = JSON,
) -> None:
    """Rebuild or complete the database from the API, or take over an llmcomp registry; exit
    status 1 when a key's jobs could not be read (the summary says why)."""
    from labmgr.finetuning import import_from_api, import_llmcomp

    if from_api == (llmcomp is not None):
        raise LabmgrError(
            "Say where to import from: --from-api or --llmcomp DIR (one of them).",
            hint="labmgr jobs import --from-api",
        )
    settings = cli_settings(ctx)
    if llmcomp is not None:
        summary = import_llmcomp(llmcomp, settings=settings)
    else:
        summary = import_from_api(settings=settings, checkpoints=checkpoints)
    if as_json:
        print_json(summary.model_dump(mode="json"))
    else:
        console = terminal()
        console.print(
            f"Read {summary.jobs_seen} job(s): {summary.jobs_new} new; recorded "
            f"{summary.models} model(s) and {summary.files} file(s)."
        )
        for problem in summary.problems:
            console.print(f"  could not read: {problem}")
    if summary.problems:
        raise LabmgrError(
            f"Could not read everything: {summary.problems[0].rstrip('.')}"
            + (f" (and {len(summary.problems) - 1} more)" if len(summary.problems) > 1 else "")
            + ".",
            hint="Fix the key or endpoint it names, then import again (nothing is recorded twice).",
        )
