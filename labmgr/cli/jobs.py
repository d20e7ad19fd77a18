"""`labmgr jobs …`: refresh, list, show and import fine-tuning jobs."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from labmgr.cli.errors import cli_errors
from labmgr.cli.jobs_render import console, job_row, print_json, when
from labmgr.cli.state import cli_settings
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from labmgr.finetuning import ImportSummary, UpdateSummary

app = typer.Typer(help="Refresh, list, show and import fine-tuning jobs.", no_args_is_help=True)


def _print_summary(summary: UpdateSummary) -> None:
    if not summary.checked and not summary.unchecked:
        console.print("No job is waiting: every recorded job is final.")
        return
    table = Table(title="Fine-tuning jobs checked", title_justify="left")
    for column in ("job", "suffix", "status", "phase / model", "ETA (training, +safety)"):
        table.add_column(column, overflow="fold")
    for job in summary.checked:
        detail = job.fine_tuned_model or job.error or job.phase or ""
        eta = ""
        if job.estimated_finish and job.real_eta:
            eta = f"{when(job.estimated_finish)}, {job.real_eta:%H:%M}"
        status = job.status + (" (new)" if job.newly_finished else "")
        table.add_row(job.job_id, job.suffix or "", status, detail, eta)
    console.print(table)
    console.print(
        f"running {len(summary.running)}, succeeded {len(summary.succeeded)}, "
        f"failed {len(summary.failed)}, cancelled {len(summary.cancelled)}, "
        f"newly finished {len(summary.newly_finished)}; {summary.requests} API requests"
    )
    if summary.unchecked:
        console.print(f"Could not check {len(summary.unchecked)} job(s):")
        for unchecked in summary.unchecked:
            console.print(
                f"  {unchecked.job_id} ({unchecked.suffix or 'no suffix'}): {unchecked.reason}"
            )


@app.command("update")
@cli_errors
def update(
    ctx: typer.Context,
    watch: float | None = typer.Option(
        None, "--watch", help="Repeat every SECONDS until no job is running (Ctrl-C stops)."
    ),
    concurrency: int = typer.Option(16, "--concurrency", help="Jobs refreshed at once."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Refresh every job that is not final yet (concurrently), and print a summary."""
    from labmgr.finetuning import update as update_jobs

    settings = cli_settings(ctx)
    if watch is not None and watch <= 0:
        raise typer.BadParameter("must be a positive number of seconds", param_hint="--watch")
    try:
        while True:
            summary = update_jobs(settings=settings, concurrency=concurrency)
            if as_json:
                data = summary.model_dump(mode="json")
                data["newly_finished"] = [job.job_id for job in summary.newly_finished]
                print_json(data)
            else:
                _print_summary(summary)
            if watch is None or not summary.still_running:
                break
            time.sleep(watch)
    except KeyboardInterrupt:
        console.print("Stopped; every job refreshed so far is recorded.")
        raise typer.Exit(130) from None


@app.command("list")
@cli_errors
def list_jobs(
    ctx: typer.Context,
    status: Annotated[
        list[str] | None, typer.Option("--status", help="Only jobs with this status.")
    ] = None,
    base: str | None = typer.Option(None, "--base", help="Only jobs of this base model."),
    suffix: str | None = typer.Option(None, "--suffix", help="Suffix or glob (insecure-*)."),
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="key=value the job must have.")
    ] = None,
    as_json: bool = typer.Option(False, "--json", help="Print the jobs as JSON."),
) -> None:
    """List recorded jobs, oldest first."""
    from jobs_db import list_jobs as query_jobs
    from labmgr.finetuning import lab_database

    with lab_database(cli_settings(ctx)) as db:
        jobs = query_jobs(
            db, status=status or None, base_model=base, suffix=suffix, tags=tag or None
        )
    if as_json:
        print_json([job_row(job) for job in jobs])
        return
    table = Table(title=f"{len(jobs)} fine-tuning job(s)", title_justify="left")
    for column in ("job", "created", "base", "suffix", "seed", "status", "model", "tags"):
        table.add_column(column, overflow="fold")
    for job in jobs:
        table.add_row(
            job.id,
            when(job.created_at),
            job.base_model or job.resolved_base_model or "",
            job.suffix or "",
            "" if job.seed is None else str(job.seed),
            job.status,
            job.fine_tuned_model or "",
            " ".join(f"{k}={v}" for k, v in job.tag_dict.items()),
        )
    console.print(table)


@app.command("show")
@cli_errors
def show(
    ctx: typer.Context,
    job_id: Annotated[str, typer.Argument(help="The job id (ftjob-…).")],
    as_json: bool = typer.Option(False, "--json", help="Print job, events, models as JSON."),
) -> None:
    """One job with its events, final model and checkpoints."""
    from jobs_db import get_job, job_events, job_models
    from labmgr.finetuning import UnknownJob, lab_database

    with lab_database(cli_settings(ctx)) as db:
        job = get_job(db, job_id)
        if job is None:
            raise UnknownJob(
                f"Job {job_id} is not in the lab's database.",
                hint="See `labmgr jobs list`, or record jobs made elsewhere with "
                "`labmgr jobs import --from-api`.",
            )
        events, models = job_events(db, job_id), job_models(db, job_id)
    if as_json:
        print_json(
            {
                "job": job_row(job),
                "events": [event.model_dump(mode="json") for event in events],
                "models": [model.model_dump(mode="json") for model in models],
            }
        )
        return
    row = job_row(job)
    for name in (
        "id", "status", "phase", "base_model", "resolved_base_model", "suffix", "method",
        "hyperparameters_requested", "hyperparameters_actual", "seed", "key_env",
        "organization_id", "project_id", "training_file_id", "validation_file_id",
        "trained_tokens", "estimated_finish", "created_at", "finished_at", "refreshed_at",
        "error_message", "fine_tuned_model", "tags",
    ):  # fmt: skip
        if row.get(name) not in (None, "", {}):
            console.print(f"{name:26} {row[name]}")
    table = Table(title="Models", title_justify="left")
    for column in ("model", "kind", "step", "epoch", "train_loss"):
        table.add_column(column, overflow="fold")
    for model in models:
        loss = (model.metrics or {}).get("train_loss")
        table.add_row(
            model.name,
            model.kind,
            "" if model.step is None else str(model.step),
            "" if model.epoch is None else str(model.epoch),
            "" if loss is None else f"{loss:.4f}",
        )
    console.print(table)
    console.print(f"Events ({len(events)}, oldest first):")
    for event in events:
        console.print(f"  {when(event.created_at)} {event.level or ''} {event.message or ''}")


def _print_import(summary: ImportSummary) -> None:
    console.print(
        f"Read {summary.jobs_seen} job(s): {summary.jobs_new} new; recorded {summary.models} "
        f"model(s) and {summary.files} file(s)."
    )
    for problem in summary.problems:
        console.print(f"  could not read: {problem}")


@app.command("import")
@cli_errors
def import_jobs(
    ctx: typer.Context,
    from_api: bool = typer.Option(False, "--from-api", help="Every configured key's jobs."),
    llmcomp: Annotated[
        Path | None,
        typer.Option("--llmcomp", help="An llmcomp data_dir holding jobs.jsonl and files.jsonl."),
    ] = None,
    checkpoints: bool = typer.Option(
        True, "--checkpoints/--no-checkpoints", help="Also record checkpoints (API import)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Rebuild or complete the database from the API, or take over an llmcomp registry."""
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
        _print_import(summary)
