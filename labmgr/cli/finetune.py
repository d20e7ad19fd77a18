"""`labmgr finetune …`: validate training files, create and cancel fine-tuning jobs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from labmgr.cli.errors import cli_errors
from labmgr.cli.jobs_render import job_row, print_json
from labmgr.cli.state import cli_settings
from labmgr.errors import InvalidTrainingFile
from labmgr.finetuning import MIN_EXAMPLES, Method, ValidationReport, validate_training_file

app = typer.Typer(help="Validate training files and manage fine-tuning jobs.", no_args_is_help=True)


def _print_report(report: ValidationReport, max_issues: int) -> None:
    limit = f", limit {report.example_token_limit:,}" if report.example_token_limit else ""
    typer.echo(
        f"{report.path}: {report.n_examples:,} examples, ~{report.n_tokens:,} tokens "
        f"(estimated; longest example ~{report.max_example_tokens:,}{limit})"
    )
    for base, dollars in report.cost_per_epoch.items():
        shown = f"{dollars:,.2f}" if dollars >= 0.01 else f"{dollars:.4f}"
        typer.echo(f"Estimated training cost per epoch on {base}: ${shown}")
    if not report.cost_per_epoch and report.base_model:
        typer.echo(f"No training price known for {report.base_model}.")
    for title, issues, count in (
        ("Errors", report.errors, report.error_count),
        ("Warnings", report.warnings, report.warning_count),
    ):
        if not count:
            continue
        typer.echo(f"{title} ({count:,}):")
        for issue in issues[:max_issues]:
            typer.echo(f"  {issue.format(report.path)}")
        if count > max_issues:
            typer.echo(f"  … and {count - max_issues:,} more (use --max-issues or --json)")
    if report.valid:
        typer.echo("Valid.")


@app.command("validate", short_help="Check a training file against the API's rules.")
@cli_errors
def validate(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The JSONL training file.")],
    model: str | None = typer.Option(
        None,
        "--model",
        "--base",
        metavar="<model>",
        help="Base model: checks its token limit and prices training.",
    ),
    method: Annotated[
        Method, typer.Option("--method", help="supervised (chat) or dpo.")
    ] = "supervised",
    min_examples: int = typer.Option(
        MIN_EXAMPLES,
        "--min-examples",
        metavar="<n>",
        min=1,
        help="Fewest examples required (1 for validation files).",
    ),
    max_issues: int = typer.Option(
        50, "--max-issues", metavar="<n>", min=0, help="Errors/warnings to print of each."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON."),
) -> None:
    """Check a training file against the API's rules; exit status 1 when it is invalid.

    Makes no request: token counts and costs are estimates.
    """
    settings = cli_settings(ctx)
    report = validate_training_file(
        file, method, model, min_examples=min_examples, prices=settings.prices
    )
    if as_json:
        data = report.model_dump(mode="json")
        data["valid"] = report.valid
        data["tokens_are_estimated"] = True
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_report(report, max_issues)
    if not report.valid:
        if report.error_count == 1 and report.errors:
            message = report.errors[0].format(report.path).rstrip(".") + "."
        else:
            message = (
                f"{report.path} is not a valid {report.method} training file "
                f"({report.error_count:,} errors, listed {'in the JSON' if as_json else 'above'})."
            )
        raise InvalidTrainingFile(
            message, hint="Fix the file and validate it again.", report=report
        )


def _hyperparameter(value: str, option: str) -> int | float | Literal["auto"]:
    if value == "auto":
        return "auto"
    try:
        number = float(value)
    except ValueError:
        raise typer.BadParameter(
            f"must be 'auto' or a number, not {value!r}", param_hint=option
        ) from None
    return int(number) if number.is_integer() and "." not in value else number


@app.command("create", short_help="Validate, upload once and create fine-tuning job(s).")
@cli_errors
def create(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The JSONL training file.")],
    base: str = typer.Option(
        ..., "--base", metavar="<model>", help="Base model, e.g. gpt-4.1-mini."
    ),
    suffix: str | None = typer.Option(
        None,
        "--suffix",
        metavar="<suffix>",
        help="Suffix of the model name (default: the file name).",
    ),
    epochs: str = typer.Option("auto", "--epochs", metavar="<n|auto>", help="Epochs, or auto."),
    batch_size: str = typer.Option(
        "auto", "--batch-size", metavar="<n|auto>", help="Batch size, or auto."
    ),
    lr_multiplier: str = typer.Option(
        "auto", "--lr-multiplier", metavar="<x|auto>", help="LR multiplier, or auto."
    ),
    seed: int | None = typer.Option(
        None, "--seed", metavar="<n>", help="Seed (with --seeds: the first one)."
    ),
    seeds: int = typer.Option(
        1, "--seeds", metavar="<n>", min=1, help="Replicas to launch, each with its own seed."
    ),
    validation_file: Annotated[
        Path | None,
        typer.Option("--validation-file", metavar="<file>", help="JSONL validation file."),
    ] = None,
    method: Annotated[Method, typer.Option("--method", help="supervised or dpo.")] = "supervised",
    key: str | None = typer.Option(
        None,
        "--key",
        metavar="<env-var>",
        help="Name of the env var holding the key (default: OPENAI_API_KEY).",
    ),
    tag: Annotated[
        list[str] | None,
        typer.Option("--tag", metavar="<key=value>", help="Label; repeat for several."),
    ] = None,
    dry_run: bool = typer.Option(False, "--dry-run", help="Check everything; upload nothing."),
    as_json: bool = typer.Option(False, "--json", help="Print the jobs as JSON."),
) -> None:
    """Validate, upload once, and create fine-tuning job(s); print their ids."""
    from labmgr.finetuning import create as create_jobs

    jobs = create_jobs(
        file,
        base_model=base,
        suffix=suffix,
        epochs=_hyperparameter(epochs, "--epochs"),
        batch_size=_hyperparameter(batch_size, "--batch-size"),
        lr_multiplier=_hyperparameter(lr_multiplier, "--lr-multiplier"),
        seed=seed,
        seeds=seeds,
        validation_file=validation_file,
        method=method,
        key_env=key,
        tags=tag,
        dry_run=dry_run,
        settings=cli_settings(ctx),
    )
    if as_json:
        print_json([job_row(job) for job in jobs])
        return
    for job in jobs:
        seed_text = job.seed if job.seed is not None else job.seed_requested
        if dry_run:
            typer.echo(
                f"would create: suffix {job.suffix}, base {job.base_model}, seed "
                f"{seed_text if seed_text is not None else 'chosen by the API'}, key {job.key_env}"
            )
        else:
            typer.echo(f"{job.id}  suffix {job.suffix}  seed {seed_text}  {job.status}")
    if dry_run:
        typer.echo(f"Dry run: {file} is valid; nothing was uploaded and no job was created.")


@app.command("cancel")
@cli_errors
def cancel(
    ctx: typer.Context,
    job: Annotated[
        str,
        typer.Argument(
            help="The job id, a short form `jobs list` prints (ftjob-…a1b2), or a unique prefix.",
        ),
    ],
) -> None:
    """Cancel a fine-tuning job and record its new status."""
    from labmgr.finetuning import cancel as cancel_job

    cancelled = cancel_job(job, settings=cli_settings(ctx))
    typer.echo(f"{cancelled.id}: {cancelled.status}")
