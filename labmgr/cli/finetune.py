"""`labmgr finetune …`: training-file validation (job creation lives beside it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

import typer

from labmgr.cli.errors import cli_errors
from labmgr.cli.state import cli_settings
from labmgr.finetuning import MIN_EXAMPLES, ValidationReport, validate_training_file

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
    typer.echo("Valid." if report.valid else "Invalid: fix the errors above.")


@app.command("validate")
@cli_errors
def validate(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The JSONL training file.")],
    model: str | None = typer.Option(
        None, "--model", "--base", help="Base model: checks its token limit and prices training."
    ),
    method: str = typer.Option("supervised", "--method", help="supervised (chat) or dpo."),
    min_examples: int = typer.Option(
        MIN_EXAMPLES, "--min-examples", help="Fewest examples required (1 for validation files)."
    ),
    max_issues: int = typer.Option(50, "--max-issues", help="Errors/warnings to print of each."),
    as_json: bool = typer.Option(False, "--json", help="Print the whole report as JSON."),
) -> None:
    """Check a training file against the API's rules; exit status 1 when it is invalid."""
    if method not in ("supervised", "dpo"):
        raise typer.BadParameter("must be 'supervised' or 'dpo'", param_hint="--method")
    chosen: Literal["supervised", "dpo"] = "dpo" if method == "dpo" else "supervised"
    settings = cli_settings(ctx)
    report = validate_training_file(
        file, chosen, model, min_examples=min_examples, prices=settings.prices
    )
    if as_json:
        data = report.model_dump(mode="json")
        data["valid"] = report.valid
        data["tokens_are_estimated"] = True
        typer.echo(json.dumps(data, indent=2))
    else:
        _print_report(report, max_issues)
    if not report.valid:
        raise typer.Exit(1)
