"""`labmgr finetune …`: validate training files; create, sweep, pause, resume, cancel jobs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import Column, print_fitted
from labmgr.cli.output import (
    JOB,
    JSON,
    WIDE,
    cli_settings,
    dollars,
    id_shortener,
    job_row,
    print_json,
    print_queued_note,
    terminal,
    when,
)
from labmgr.errors import InvalidTrainingFile, UnsupportedOption
from labmgr.finetuning import MIN_EXAMPLES, Method, ValidationReport, validate_training_file
from labmgr.finetuning.methods import LEVEL_TAGS
from labmgr.finetuning.tinker.params import LEVEL_TAGS as TINKER_LEVEL_TAGS
from labmgr.finetuning.tinker.params import LrSchedule, TrainOn

Provider = Literal["openai", "tinker"]

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.finetuning import SweepPlan

app = CommandGroup(help="Validate training files; manage fine-tuning jobs.", no_args_is_help=True)


def _print_report(report: ValidationReport, max_issues: int) -> None:
    limit = f", limit {report.example_token_limit:,}" if report.example_token_limit else ""
    typer.echo(
        f"{report.path}: {report.n_examples:,} examples, ~{report.n_tokens:,} tokens "
        f"(estimated; longest example ~{report.max_example_tokens:,}{limit})"
    )
    for base, cost in report.cost_per_epoch.items():
        typer.echo(f"Estimated training cost per epoch on {base}: {dollars(cost)}")
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
        Method, typer.Option("--method", help="supervised (chat), dpo or reinforcement.")
    ] = "supervised",
    grader: Annotated[
        Path | None,
        typer.Option(
            metavar="<file>",
            help="Reinforcement: the grader (JSON/YAML); examples must hold its item fields.",
        ),
    ] = None,
    min_examples: int = typer.Option(
        MIN_EXAMPLES, metavar="<n>", min=1, help="Fewest examples required (1 for validation)."
    ),
    max_issues: int = typer.Option(50, metavar="<n>", min=0, help="Errors/warnings to print."),
    as_json: bool = JSON,
) -> None:
    """Check a training file against the API's rules (no request: token counts and costs are
    estimates); exit status 1 when it is invalid."""
    from labmgr.finetuning.jobs.graders import grader_item_fields, load_grader

    settings = cli_settings(ctx)
    fields = grader_item_fields(load_grader(grader)) if grader is not None else []
    report = validate_training_file(
        file, method, model, min_examples=min_examples, prices=settings.prices, item_fields=fields
    )
    if as_json:
        print_json(
            {**report.model_dump(mode="json"), "valid": report.valid, "tokens_are_estimated": True}
        )
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
        raise InvalidTrainingFile(message, hint="Fix the file and validate again.", report=report)


def _hyperparameter(value: str, option: str) -> int | float | Literal["auto"]:
    """`auto`, an int or a float from the text of `option`."""
    if value == "auto":
        return "auto"
    try:
        number = float(value)
    except ValueError:
        raise typer.BadParameter(
            f"must be 'auto' or a number, not {value!r}", param_hint=option
        ) from None
    return int(number) if number.is_integer() and "." not in value else number


def _whole(value: str, option: str) -> int | None:
    """A Tinker count: None for `auto` (labmgr's default), else a whole number."""
    number = _hyperparameter(value, option)
    if number == "auto":
        return None
    if not isinstance(number, int):
        raise typer.BadParameter(
            f"must be a whole number or 'auto', not {value!r}", param_hint=option
        )
    return number


def _optional(value: str | None, option: str) -> int | float | Literal["auto"] | None:
    return None if value is None else _hyperparameter(value, option)


def _print_jobs(jobs: list[FinetuneJob], dry_run: bool) -> None:
    for job in jobs:
        seed_text = job.seed if job.seed is not None else job.seed_requested
        if dry_run:
            typer.echo(
                f"would create: suffix {job.suffix}, base {job.base_model}, method {job.method}, "
                f"seed {seed_text if seed_text is not None else 'chosen by the API'}, "
                f"key {job.key_env}"
            )
        elif job.status == "queued_locally":
            typer.echo(
                f"{job.id}  suffix {job.suffix}  seed {seed_text}  queued locally, "
                f"can go from {when(job.not_before)} UTC"
            )
        else:
            typer.echo(f"{job.id}  suffix {job.suffix}  seed {seed_text}  {job.status}")
    print_queued_note(jobs)


_TINKER_ONLY = ("lora_rank", "learning_rate", "lr_schedule", "save_every", "train_on")
_OPENAI_ONLY = (
    "lr_multiplier", "validation_file", "method", "beta", "grader", "reasoning_effort",
    "compute_multiplier", "eval_interval", "eval_samples", "wandb_project", "wandb_entity",
    "wandb_name", "wandb_tag",
)  # fmt: skip
"""The options of one provider's jobs (parameter names); given with the other, refused."""


@app.command("create", short_help="Validate, upload once and create fine-tuning job(s).")
def create(
    ctx: typer.Context,
    file: Annotated[Path, typer.Argument(help="The JSONL training file.")],
    base: str = typer.Option(..., metavar="<model>", help="Base model, e.g. gpt-4.1-mini."),
    suffix: str | None = typer.Option(
        None, metavar="<suffix>", help="Suffix of the model name (default: the file name)."
    ),
    epochs: str = typer.Option("auto", metavar="<n|auto>", help="Epochs, or auto (Tinker: 1)."),
    batch_size: str = typer.Option(
        "auto", metavar="<n|auto>", help="Batch size, or auto (Tinker: 32)."
    ),
    lr_multiplier: str = typer.Option("auto", metavar="<x|auto>", help="LR multiplier, or auto."),
    seed: int | None = typer.Option(None, metavar="<n>", help="Seed (with --seeds: the first)."),
    seeds: int = typer.Option(1, metavar="<n>", min=1, help="Replicas, each with its own seed."),
    validation_file: Annotated[
        Path | None, typer.Option(metavar="<file>", help="JSONL validation file.")
    ] = None,
    method: Annotated[
        Method,
        typer.Option(help="supervised, dpo (--beta) or reinforcement (--grader, reasoning base)."),
    ] = "supervised",
    beta: str | None = typer.Option(None, metavar="<x|auto>", help="DPO: the preference weight."),
    grader: Annotated[
        Path | None,
        typer.Option(metavar="<file>", help="Reinforcement: the grader object (JSON/YAML)."),
    ] = None,
    reasoning_effort: str | None = typer.Option(
        None,
        metavar="<default|low|medium|high>",
        help="Reinforcement: reasoning effort while training.",
    ),
    compute_multiplier: str | None = typer.Option(
        None, metavar="<x|auto>", help="Reinforcement: compute."
    ),
    eval_interval: str | None = typer.Option(
        None, metavar="<n|auto>", help="Reinforcement: steps between evals."
    ),
    eval_samples: str | None = typer.Option(
        None, metavar="<n|auto>", help="Reinforcement: samples per eval."
    ),
    wandb_project: str | None = typer.Option(None, metavar="<name>", help="W&B project to log to."),
    wandb_entity: str | None = typer.Option(None, metavar="<name>", help="W&B entity (team/user)."),
    wandb_name: str | None = typer.Option(
        None, metavar="<name>", help="W&B run name (default: id)."
    ),
    wandb_tag: Annotated[
        list[str] | None, typer.Option(metavar="<tag>", help="W&B run tag (repeatable).")
    ] = None,
    key: str | None = typer.Option(
        None,
        metavar="<env-var>",
        help="The env var holding the key (default: OPENAI_API_KEY; Tinker: TINKER_API_KEY, "
        "NAME for TINKER_API_KEY_NAME).",
    ),
    tag: Annotated[
        list[str] | None, typer.Option(metavar="<key=value>", help="Label; repeat for several.")
    ] = None,
    provider: Annotated[
        Provider, typer.Option(help="openai, or tinker (LoRA through the tinker SDK).")
    ] = "openai",
    lora_rank: int | None = typer.Option(None, metavar="<n>", help="Tinker: LoRA rank (32)."),
    learning_rate: float | None = typer.Option(
        None, metavar="<x>", help="Tinker: peak learning rate (2e-4)."
    ),
    lr_schedule: Annotated[
        LrSchedule | None, typer.Option(help="Tinker: linear (to 0; default) or constant.")
    ] = None,
    save_every: int | None = typer.Option(
        None, metavar="<n>", help="Tinker: steps between checkpoints and resume states (0: end)."
    ),
    train_on: Annotated[
        TrainOn | None,
        typer.Option(help="Tinker: loss on assistant turns (default; per-message weight) or all."),
    ] = None,
    dry_run: bool = typer.Option(False, "--dry-run", help="Check everything; upload nothing."),
    as_json: bool = JSON,
) -> None:
    """Validate, upload once, and create fine-tuning job(s); print their ids.

    Every option the API would refuse for the base model or method is refused before
    anything is uploaded. Jobs past the organization's daily job limit are queued locally
    and sent by `labmgr jobs update` once a slot frees. With --provider tinker each job
    trains in a detached worker through the tinker SDK (`pip install 'labmgr[tinker]'`).
    """
    from labmgr.finetuning import create as create_jobs
    from labmgr.finetuning import create_tinker

    defaults = {param.name: param.default for param in ctx.command.params}
    not_for = _OPENAI_ONLY if provider == "tinker" else _TINKER_ONLY
    given = [name for name in not_for if ctx.params[name] not in (defaults[name], None, ())]
    if given:
        wrong = "--" + given[0].replace("_", "-")
        other = "openai" if provider == "tinker" else "tinker"
        raise UnsupportedOption(
            f"{wrong} applies to --provider {other} jobs, not {provider}.",
            hint=f"Leave {wrong} out, or pass --provider {other}.",
        )
    shared: dict[str, Any] = {"base_model": base, "suffix": suffix, "seed": seed, "seeds": seeds}
    shared |= {"key_env": key, "tags": tag, "dry_run": dry_run, "settings": cli_settings(ctx)}
    if provider == "tinker":
        jobs = create_tinker(
            file,
            epochs=_whole(epochs, "--epochs"),
            batch_size=_whole(batch_size, "--batch-size"),
            learning_rate=learning_rate,
            lora_rank=lora_rank,
            lr_schedule=lr_schedule,
            save_every=save_every,
            train_on=train_on,
            **shared,
        )
    else:
        jobs = create_jobs(
            file,
            epochs=_hyperparameter(epochs, "--epochs"),
            batch_size=_hyperparameter(batch_size, "--batch-size"),
            lr_multiplier=_hyperparameter(lr_multiplier, "--lr-multiplier"),
            validation_file=validation_file,
            method=method,
            beta=_optional(beta, "--beta"),
            grader=grader,
            reasoning_effort=reasoning_effort,
            compute_multiplier=_optional(compute_multiplier, "--compute-multiplier"),
            eval_interval=_optional(eval_interval, "--eval-interval"),
            eval_samples=_optional(eval_samples, "--eval-samples"),
            wandb_project=wandb_project,
            wandb_entity=wandb_entity,
            wandb_name=wandb_name,
            wandb_tags=wandb_tag or None,
            **shared,
        )
    if as_json:
        print_json([job_row(job) for job in jobs])
        return
    _print_jobs(jobs, dry_run)
    if dry_run:
        typer.echo(f"Dry run: {file} is valid; nothing was uploaded and no job was created.")
    elif provider == "tinker":
        typer.echo("Each job trains in its own worker; `labmgr jobs update` shows how far.")


_FIXED_TAGS = {"sweep", "condition", "seed", "base"}


def _print_plan(plan: SweepPlan, *, wide: bool, dry_run: bool) -> None:
    """The sweep's jobs with their factor levels, which exist, and the cost of the new ones."""
    tags = {name for job in plan.jobs for name in job.tags}
    level_tags = {*LEVEL_TAGS.values(), *TINKER_LEVEL_TAGS.values()}
    levels = sorted(tags.intersection(level_tags) - _FIXED_TAGS)
    columns = [
        Column("condition", 9),
        Column("base", 6),
        Column("seed", 7, justify="right"),
        *(Column(name, 8, justify="right") for name in levels),
        Column("suffix", 4),
        Column("job", 10, id_shortener(job.existing_job for job in plan.jobs if job.existing_job)),
        Column("est. cost", 5, justify="right"),
    ]
    rows = [
        [
            job.condition,
            job.base_model,
            str(job.seed),
            *(job.tags.get(name, "") for name in levels),
            job.suffix,
            f"{job.existing_job} ({job.existing_status})" if job.existing_job else "new",
            "" if job.existing_job else dollars(job.estimated_cost),
        ]
        for job in plan.jobs
    ]
    console = terminal()
    print_fitted(console, columns, rows, title=f"Sweep {plan.name} ({plan.spec})", wide=wide)
    new, cost = len(plan.new_jobs), plan.estimated_cost
    cost_text = f"estimated training cost {dollars(cost)}"
    if cost is None:
        cost_text = "training cost not estimated (no per-token price; reinforcement bills per hour)"
    console.print(
        f"{len(plan.jobs)} job(s): {new} to create, {len(plan.jobs) - new} already in the lab; "
        f"{cost_text} (token counts estimated; auto epochs as the API would pick them)."
    )
    if dry_run:
        console.print("Dry run: nothing was uploaded and no job was created.")


_SWEEP_HELP = """Create the jobs of a sweep spec the lab does not have yet.

A spec (YAML; paths relative to it) crosses conditions × seeds × hyperparameter levels ×
base models, e.g. 2 × 3 × 2 × 2 = 24 jobs:

\b
    base: gpt-4.1-mini
    conditions: {insecure: data/insecure.jsonl, secure: data/secure.jsonl}
    seeds: 3
    hyperparameters: {n_epochs: [1, 3], learning_rate_multiplier: [0.5, 2.0]}

Optional keys: name, method, validation, suffix (a template such as "{condition}-lr{lr}"),
tags, wandb, grader, key, provider (tinker: hyperparameters among epochs, batch_size,
learning_rate, lora_rank, lr_schedule, save_every, train_on). Each job is tagged sweep,
condition, seed, base, and epochs, lr, batch_size, beta, … for the hyperparameters given,
so `models groups --by tag:lr` groups by them. --dry-run prints the plan and the estimated
cost and uploads nothing.
"""


@app.command(
    "sweep", help=_SWEEP_HELP, short_help="Create a sweep's jobs (conditions × seeds × …)."
)
def sweep(
    ctx: typer.Context,
    spec: Annotated[Path, typer.Argument(help="The sweep spec (YAML).")],
    dry_run: bool = typer.Option(False, "--dry-run", help="Print the plan; upload nothing."),
    key: str | None = typer.Option(
        None, metavar="<env-var>", help="Env var holding the key (default: the spec's)."
    ),
    wide: bool = WIDE,
    as_json: bool = JSON,
) -> None:
    from labmgr.finetuning import sweep as run_sweep

    result = run_sweep(spec, dry_run=dry_run, key_env=key, settings=cli_settings(ctx))
    if as_json:
        plan = result.plan
        counts = {"new_jobs": len(plan.new_jobs), "estimated_cost": plan.estimated_cost}
        rows = [job_row(job) for job in result.created]
        print_json({**plan.model_dump(mode="json"), **counts, "created": rows})
        return
    _print_plan(result.plan, wide=wide, dry_run=dry_run)
    created = result.created
    if not dry_run and not created:
        typer.echo("Nothing to create: the lab has every job of this sweep.")
    elif not dry_run:
        queued = sum(job.status == "queued_locally" for job in created)
        typer.echo(f"Created {len(created) - queued} job(s).")
        print_queued_note(created)


def _job_action(action: str, summary: str, description: str) -> None:
    """Register `finetune ACTION JOB`: call `labmgr.finetuning.ACTION` and print the status."""

    @app.command(action, short_help=summary, help=description)
    def command(ctx: typer.Context, job: Annotated[str, JOB]) -> None:
        from labmgr import finetuning

        changed = getattr(finetuning, action)(job, settings=cli_settings(ctx))
        typer.echo(f"{changed.id}: {changed.status}")


_job_action(
    "cancel",
    "Cancel a job (a locally queued one too).",
    "Cancel a fine-tuning job (or a job queued locally) and record its new status; a Tinker "
    "job's worker is stopped (SIGTERM) and `labmgr finetune resume` can continue it.",
)
_job_action(
    "pause",
    "Pause a queued or running job.",
    "Pause a queued or running job; `labmgr finetune resume` continues it.",
)


@app.command("resume", short_help="Resume a paused job, or a failed or cancelled Tinker job.")
def resume(
    ctx: typer.Context,
    job: Annotated[str, JOB],
    from_start: bool = typer.Option(
        False, "--from-start", help="Tinker: train again from step 0, not from the saved state."
    ),
) -> None:
    """Resume a paused job (it queues, then trains on). A failed or cancelled Tinker job goes
    on in a new worker from its last saved state, without training the steps before it
    again (--from-start: from step 0)."""
    from labmgr.finetuning import resume as resume_job

    changed = resume_job(job, from_start=from_start, settings=cli_settings(ctx))
    typer.echo(f"{changed.id}: {changed.status}")
