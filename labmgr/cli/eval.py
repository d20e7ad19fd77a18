"""`labmgr eval run`, `score`, `compare` and `history`: run question files over model groups
into a run folder (samples, summary, comparisons against a baseline, costs, report), judge a
finished run later, list the scores that moved between two runs, and follow scores over
runs."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from labmgr.cli.errors import cli_errors
from labmgr.cli.eval_tables import compact_summary, print_comparisons, print_full_summary
from labmgr.cli.state import cli_settings
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    import pandas as pd

    from evals import Estimate, Question
    from evals.runs import Run
    from labmgr.settings import Settings

app = typer.Typer(
    help="Run questions over groups of models and compare runs.", no_args_is_help=True
)
CI_METHODS = ("t", "hierarchical", "plain")


def _console() -> Console:
    """A console as wide as the terminal is now (``COLUMNS``)."""
    return Console(highlight=False)


def parse_group(spec: str) -> tuple[str, list[str]]:
    """`NAME=MODEL,MODEL…` → (name, models)."""
    name, sep, models = spec.partition("=")
    members = [m.strip() for m in models.split(",") if m.strip()]
    if not sep or not name.strip() or not members:
        raise LabmgrError(
            f"--group {spec!r} must look like NAME=MODEL[,MODEL…]",
            hint="For example: --group base=gpt-4.1-mini --group tuned=ft:gpt-4.1-mini:org:x:1",
        )
    return name.strip(), members


def _load(path: Path, wanted: list[str]) -> dict[str, Question]:
    from evals import load_questions

    questions = load_questions(path)
    if not questions:
        raise LabmgrError(f"{path}: no questions in this file")
    missing = [name for name in wanted if name not in questions]
    if missing:
        raise LabmgrError(
            f"{path}: no question named {', '.join(repr(m) for m in missing)}",
            hint=f"Questions in the file: {', '.join(questions)}",
        )
    return {name: questions[name] for name in wanted} if wanted else questions


def _groups(
    settings: Settings,
    specs: list[str],
    groups_by: str | None,
    base: str | None,
    include_base: bool | None,
    checkpoints: bool,
) -> tuple[dict[str, list[str]], dict[str, dict[str, Any]]]:
    groups: dict[str, list[str]] = {}
    facts: dict[str, dict[str, Any]] = {}
    if groups_by is not None:
        from evals import groups_from_database

        groups, facts = groups_from_database(
            settings.db_url,
            by=groups_by,
            base_model=base,
            include_base=include_base is not False,
            checkpoints=checkpoints,
        )
        if not groups:
            raise LabmgrError(
                f"no models in the database match --groups-by {groups_by}"
                + (f" --base {base}" if base else ""),
                hint="Run `labmgr jobs update` first, or give the groups with --group.",
            )
    elif base or include_base is not None or checkpoints:
        raise LabmgrError(
            "--base, --include-base/--no-include-base and --checkpoints need --groups-by"
        )
    for spec in specs:
        name, members = parse_group(spec)
        if name in groups:
            raise LabmgrError(f"group {name!r} is given twice")
        groups[name] = members
    if not groups:
        raise LabmgrError(
            "no model groups",
            hint="Give --group NAME=MODEL,… or --groups-by suffix --base MODEL.",
        )
    return groups, facts


def _show_estimate(estimates: dict[str, Estimate], *, as_json: bool, batch: bool) -> None:
    console = _console()
    rows = [{"question": name, **vars(estimate)} for name, estimate in estimates.items()]
    total = sum(row["cost"] for row in rows)
    batch_total = sum(row["batch_cost"] for row in rows)
    if as_json:
        body = {"questions": rows, "cost": total, "batch_cost": batch_total}
        typer.echo(json.dumps(body, indent=2, default=list))
        return
    table = Table(title="What this run would buy (nothing was sent)")
    columns = ["question", "requests", "new samples", "cached", "judge requests", "cost ≤"]
    if batch:
        columns.append("with --batch ≤")
    for column in columns:
        table.add_column(column, justify="left" if column == "question" else "right")
    for row in rows:
        cells = [
            row["question"],
            str(row["requests"]),
            str(row["samples"]),
            str(row["cached_samples"]),
            str(row["judge_requests"]),
            f"${row['cost']:.4f}",
        ]
        if batch:
            cells.append(f"${row['batch_cost']:.4f}")
        table.add_row(*cells)
    console.print(table)
    unpriced = sorted({m for row in rows for m in row["unpriced_models"]})
    note = f" (no price known for {', '.join(unpriced)})" if unpriced else ""
    if batch:
        console.print(
            f"Total: up to ${batch_total:.4f} through the Batch API "
            f"(up to ${total:.4f} synchronously){note}"
        )
    else:
        console.print(f"Total: up to ${total:.4f}{note}")


@app.command("run")
@cli_errors
def run(
    ctx: typer.Context,
    questions_file: Annotated[
        Path, typer.Argument(help="A question YAML file (or a folder of them).")
    ],
    group: Annotated[
        list[str] | None, typer.Option("--group", help="NAME=MODEL,MODEL… (repeatable).")
    ] = None,
    groups_by: Annotated[
        str | None,
        typer.Option(
            "--groups-by", help="Group the database's models by suffix, base_model, job or tag:KEY."
        ),
    ] = None,
    base: Annotated[
        str | None, typer.Option("--base", help="Only models fine-tuned from this base.")
    ] = None,
    include_base: Annotated[
        bool | None,
        typer.Option(
            "--include-base/--no-include-base",
            help="Add the base model as its own group (the default with --groups-by).",
            show_default=False,
        ),
    ] = None,
    checkpoints: Annotated[
        bool, typer.Option("--checkpoints", help="Include the jobs' checkpoints.")
    ] = False,
    question: Annotated[
        list[str] | None, typer.Option("--question", help="Only this question (repeatable).")
    ] = None,
    samples: Annotated[
        int | None,
        typer.Option("--samples", min=1, help="Samples per paraphrase (overrides the file)."),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option("--out", help="Run folder (default: the lab's runs/<time>-<file>)."),
    ] = None,
    estimate: Annotated[
        bool, typer.Option("--estimate", help="Only say what the run would buy.")
    ] = False,
    max_cost: Annotated[
        float | None, typer.Option("--max-cost", min=0, help="Stop buying after this many dollars.")
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            help="A derived metric for every question with its scores, e.g. "
            "'misaligned: aligned < 30 among coherent > 50' (repeatable).",
        ),
    ] = None,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Compare every group with this one (comparisons.csv); default: the base "
            "model's group when --groups-by includes it.",
        ),
    ] = None,
    ci: Annotated[
        str,
        typer.Option(
            "--ci",
            help="Intervals: t (over the seeds' means), hierarchical or plain (bootstraps).",
        ),
    ] = "t",
    full: Annotated[
        bool, typer.Option("--full", help="Print the whole summary and every comparison.")
    ] = False,
    by_model: Annotated[
        bool,
        typer.Option("--by-model", help="Also write summary_by_model.csv (an interval per model)."),
    ] = False,
    no_report: Annotated[
        bool, typer.Option("--no-report", help="Do not write report.html.")
    ] = False,
    by: Annotated[
        list[str] | None,
        typer.Option(
            "--by",
            help="Split the summary, comparisons and figures by a grid factor's levels "
            "(repeatable).",
        ),
    ] = None,
    no_judges: Annotated[
        bool,
        typer.Option(
            "--no-judges", help="Ask for the answers only; judge them later with `eval score`."
        ),
    ] = False,
    judge_model: Annotated[
        str | None,
        typer.Option("--judge-model", help="Ask every judge of this model instead of its own."),
    ] = None,
    adapt: Annotated[
        bool,
        typer.Option(
            "--adapt",
            help="Leave out what a model would refuse (a temperature other than 1 for "
            "reasoning models, …) instead of stopping; questions with adapt: false still stop.",
        ),
    ] = False,
    reasoning_effort: Annotated[
        str | None,
        typer.Option(
            "--reasoning-effort",
            metavar="<effort>",
            help="Sent to reasoning models when a question names none (none, minimal, low, "
            "medium, high, …); default: none sent, the API's default applies.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    batch: Annotated[
        bool,
        typer.Option(
            "--batch", help="Send through the Batch API: half the price, answers within 24 h."
        ),
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait/--no-wait",
            help="With --batch: wait for the batches (default), or submit them and return "
            "(run the same command again, or `labmgr batches collect`, to finish).",
        ),
    ] = True,
) -> None:
    """Ask every question of every group; write samples, summary.csv, comparisons.csv (with a
    baseline), costs.csv, run.log and report.html. The report's figures are also kept in the
    lab's cache folder (figures/), so a later run draws only those whose input changed."""
    from evals import estimate_run
    from evals.groups import base_group

    asking: dict[str, Any] = {"adapt": adapt or None, "reasoning_effort": reasoning_effort}

    if ci not in CI_METHODS:
        raise LabmgrError(f"--ci {ci!r}: use one of {', '.join(CI_METHODS)}")
    settings = cli_settings(ctx)
    questions = _load(questions_file, list(question or []))
    groups, facts = _groups(settings, list(group or []), groups_by, base, include_base, checkpoints)
    if baseline is None and groups_by is not None and include_base is not False:
        baseline = base_group(groups, facts)
    if estimate:
        estimates = estimate_run(
            questions,
            groups,
            samples=samples,
            metrics=list(metric or []),
            baseline=baseline,
            by=list(by or []),
            judge=not no_judges,
            judge_model=judge_model,
            lab=settings,
            **asking,
        )
        _show_estimate(estimates, as_json=as_json, batch=batch)
        return
    if not wait and not batch:
        raise LabmgrError("--no-wait needs --batch (a synchronous run always waits)")
    from evals import RunSpec
    from evals import run as run_spec
    from evals.runner import run_context

    spec = RunSpec.create(
        questions,
        groups,
        out=out if out is not None else _default_out(settings, questions_file),
        samples=samples,
        max_cost=max_cost,
        models=facts,
        metrics=list(metric or []),
        baseline=baseline,
        method=ci,
        report=not no_report,
        by_model=by_model,
        source=str(questions_file),
        by=list(by or []),
        judge=not no_judges,
        judge_model=judge_model,
        batch=batch,
        batch_wait=wait,
    )
    try:
        result_run = run_spec(spec, run_context(lab=settings, **asking))
    except KeyboardInterrupt:
        raise LabmgrError(
            "interrupted: every finished sample is in the cache",
            hint="Run the same command again to continue where it stopped.",
        ) from None
    info = result_run.info
    if as_json:
        typer.echo(json.dumps(_run_json(result_run), indent=2, default=str))
        return
    console = _console()
    show_statistics(console, result_run, full=full)
    if no_judges:
        console.print(
            "Judges skipped: `labmgr eval score RUN` judges the answers later.", markup=False
        )
    totals, bought = info.get("totals", {}), info.get("bought", {})
    console.print(_bought_line(totals, bought))
    if info.get("stopped"):
        console.print(f"[yellow]Stopped early:[/] {info['stopped']}")
    pending = bought.get("pending")
    if pending:
        console.print(
            f"{pending} samples wait in batches still running: run the same command "
            "again, or `labmgr batches collect`, to finish."
        )
    from evals.answers import CUT_BY_BUDGET

    errors = _error_counts(result_run)
    for (model, message), count in errors[:_SHOWN_ERRORS]:
        if message == CUT_BY_BUDGET:
            console.print(
                f"[yellow]{count} empty[/] on {model}: the token budget ran out before any "
                "visible output; raise max_tokens (run.log says how far)"
            )
            continue
        console.print(f"[red]{count} failed[/] on {model}: {escape(message)}")
    if len(errors) > _SHOWN_ERRORS:
        console.print(f"… and {len(errors) - _SHOWN_ERRORS} other kinds of error (see run.log).")
    console.print(f"Run folder: {result_run.path}")
    if not no_report:
        console.print(f"Report: {result_run.path / 'report.html'}")
    if totals.get("rows") and totals.get("errors") == totals.get("rows") and not pending:
        raise LabmgrError(
            "every sample failed; nothing was measured",
            hint="Fix the errors above (keys, model names, endpoint) and run again; "
            "failures are never cached, so they are retried.",
        )


_SHOWN_ERRORS = 5


def _bought_line(totals: dict[str, Any], bought: dict[str, Any]) -> str:
    """What the run got and where it came from, claiming no cache hit that did not happen."""
    price = " at the batch price" if bought.get("price") == "batch" else ""
    line = (
        f"{totals.get('rows', 0)} rows ({totals.get('errors', 0)} with errors); "
        f"bought {bought.get('samples', 0)} samples now for ${bought.get('cost', 0):.4f}{price}"
    )
    cached = bought.get("cached_samples", 0)
    return line + (f"; {cached} samples came from the cache." if cached else ".")


def _run_json(run: Run) -> dict[str, Any]:
    """What `--json` prints of a run: its folder, totals, statistics and tables."""
    comparisons, costs = run.comparisons, run.costs()
    return {
        "run_dir": str(run.path),
        "totals": run.info.get("totals"),
        "bought": run.info.get("bought"),
        "stopped": run.info.get("stopped"),
        "statistics": run.statistics,
        "summary": _records(run.summary),
        "comparisons": None if comparisons is None else _records(comparisons),
        "costs": None if costs is None else _records(costs),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as JSON-ready dicts (NaN becomes null)."""
    cleaned = frame.astype(object).where(frame.notna(), None)
    return [{str(k): v for k, v in row.items()} for row in cleaned.to_dict(orient="records")]


def show_statistics(console: Console, run: Run, *, full: bool) -> None:
    """The compact summary (or with `full`, every row and comparison), then the comparisons
    over all questions in words."""
    from evals.stats import ALL_QUESTIONS, comparison_sentence, describe_method, folded_levels

    method = describe_method(str(run.statistics.get("method", "t")))
    summary = folded_levels(run.summary, run.by)  # a level shows like a question
    split = None if run.comparisons is None else folded_levels(run.comparisons, run.by)
    compact = compact_summary(
        summary, split, console=console, baseline=run.baseline, method_words=method
    )
    if full:
        if not summary.empty:
            print_full_summary(console, summary)
        if split is not None and not split.empty:
            print_comparisons(console, split)
    elif compact is not None:
        table, legend = compact
        console.print(table)
        for line in legend:
            console.print(line, markup=False)
    comparisons = run.comparisons
    if comparisons is not None and not comparisons.empty and not run.by:
        pooled = comparisons[comparisons["question"] == ALL_QUESTIONS]
        if not pooled.empty:
            console.print(f"Against {run.baseline}, over all questions:", markup=False)
            for row in pooled.to_dict("records"):
                console.print(f"  {comparison_sentence(row)}", markup=False)


def _default_out(settings: Settings, questions_file: Path) -> Path:
    """`<lab's runs dir>/<UTC time>-<file name>`."""
    from evals.experiments import default_run_dir

    return default_run_dir(settings, questions_file.stem)


def _error_counts(run: Run) -> list[tuple[tuple[str, str], int]]:
    """Distinct (model, error) pairs over every question, most frequent first."""
    counts: dict[tuple[str, str], int] = {}
    failed = run.errors()  # reads only the model and error columns of the samples files
    for model, message in zip(failed["model"], failed["error"], strict=True):
        key = (str(model), str(message))
        counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))


@app.command("compare")
@cli_errors
def compare(
    run_a: Annotated[Path, typer.Argument(help="The earlier run folder.")],
    run_b: Annotated[Path, typer.Argument(help="The later run folder.")],
    show_all: Annotated[
        bool, typer.Option("--all", help="Also list scores that did not move.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List question × group × score whose means moved beyond their 95% intervals."""
    from evals.runs import compare_runs

    console = _console()
    table = compare_runs(run_a, run_b)
    shown = table if show_all else table[table["status"] != "same"]
    if as_json:
        typer.echo(shown.to_json(orient="records", indent=2))
        return
    moved = int((table["status"] == "moved").sum())
    if shown.empty:
        console.print(f"No score moved beyond its interval ({len(table)} compared).")
        return
    out = Table(title=f"{moved} of {len(table)} scores moved beyond their intervals")
    for column in ("question", "group", "score", "status", "A (95% CI)", "B (95% CI)", "change"):
        out.add_column(column, justify="right" if column == "change" else "left")

    def cell(mean: float, low: float, high: float) -> str:
        return "" if math.isnan(mean) else f"{mean:.2f} ({low:.2f} – {high:.2f})"

    for row in shown.to_dict(orient="records"):
        out.add_row(
            str(row["question"]),
            str(row["group"]),
            str(row["score"]),
            str(row["status"]),
            cell(row["mean_a"], row["ci_low_a"], row["ci_high_a"]),
            cell(row["mean_b"], row["ci_low_b"], row["ci_high_b"]),
            "" if math.isnan(row["change"]) else f"{row['change']:+.2f}",
        )
    console.print(out)


@app.command("score")
@cli_errors
def score(
    ctx: typer.Context,
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    judges: Annotated[
        Path | None,
        typer.Option(
            "--judges",
            help="A YAML file of judges (rating_judge or free_form_judge entries) to add to "
            "every free-form question, replacing judges of the same name.",
        ),
    ] = None,
    judge_model: Annotated[
        str | None,
        typer.Option("--judge-model", help="Ask every judge of this model instead of its own."),
    ] = None,
    full: Annotated[
        bool, typer.Option("--full", help="Print the whole summary and every comparison.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Judge a finished run's answers (the judges it skipped, its judges with another model,
    or new ones) from its samples: only judge requests are made. Rewrites the samples,
    summary.csv, comparisons.csv, costs.csv and report.html."""
    from evals.experiments import score_run

    scored = score_run(run_dir, judges=judges, judge_model=judge_model, lab=cli_settings(ctx))
    if as_json:
        result = {**_run_json(scored.run), "judged": scored.judged, "bought": scored.bought}
        typer.echo(json.dumps(result, indent=2, default=str))
        return
    console = _console()
    for name, names in scored.judged.items():
        console.print(f"{name}: judged by {', '.join(names)}", markup=False)
    show_statistics(console, scored.run, full=full)
    console.print(
        f"Bought ${scored.bought.get('cost', 0):.4f} of verdicts now; the rest came from the "
        "cache.",
        markup=False,
    )
    if scored.report is not None:
        console.print(f"Report: {scored.report}", markup=False)


@app.command("history")
@cli_errors
def history(
    ctx: typer.Context,
    runs: Annotated[
        list[Path] | None, typer.Argument(help="Run folders (any order: sorted by date).")
    ] = None,
    questions: Annotated[
        Path | None,
        typer.Option("--questions", help="Every run of this question file in the lab's runs."),
    ] = None,
    score: Annotated[
        str | None,
        typer.Option("--score", help="The score or metric to follow (default: the headline)."),
    ] = None,
    question: Annotated[
        str | None,
        typer.Option(
            "--question", help="One question (default: over the questions every run has)."
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", help="Draw the trend to this .png, .pdf or .svg.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """A score's group means with 95% intervals run by run, each change from a group's
    previous run tested (Welch over the seeds' means, Holm over the history)."""
    from evals.experiments import run_history, runs_of_questions
    from evals.stats import ALL_QUESTIONS

    folders = list(runs or [])
    if questions is not None:
        folders += runs_of_questions(cli_settings(ctx).runs_dir, questions)
    if not folders:
        raise LabmgrError(
            "no runs given", hint="Name run folders, or --questions FILE for a file's runs."
        )
    found = run_history(
        folders, score, question=question if question is not None else ALL_QUESTIONS, out=out
    )
    table = found.table
    if as_json:
        typer.echo(
            json.dumps(
                {
                    "score": found.score,
                    "rows": _records(table),
                    "left_out": found.left_out,
                    "judge_models": found.judge_models,
                },
                default=str,
            )
        )
        return
    console = _console()
    title = f"{found.score} over {table['run'].nunique()} runs"
    out_table = Table(title=title + ("" if question is None else f" ({question})"))
    for column in ("run", "started", "group", "mean (95% CI)", "change (95% CI)", "adj. p"):
        out_table.add_column(column)

    def cell(value: float, low: float, high: float, sign: str = "") -> str:
        if math.isnan(value):
            return ""
        return f"{value:{sign}.2f} ({low:.2f} – {high:.2f})"

    for row in table.to_dict(orient="records"):
        change = cell(row["change"], row["change_low"], row["change_high"], "+")
        out_table.add_row(
            str(row["run"]),
            str(row["started"] or "")[:16].replace("T", " "),
            str(row["group"]),
            cell(row["mean"], row["ci_low"], row["ci_high"]),
            change + (" moved" if row["moved"] else ""),
            "" if math.isnan(row["p_adjusted"]) else f"{row['p_adjusted']:.3g}",
        )
    console.print(out_table)
    moved = int(table["moved"].sum())
    console.print(f"{moved} change(s) beyond their intervals (Holm over the history).")
    if found.left_out:
        runs_left = "; ".join(f"{run}: {', '.join(qs)}" for run, qs in found.left_out.items())
        console.print(
            f"Only the questions every run has are compared; left out: {runs_left}.", markup=False
        )
    if found.judge_models:
        judged = "; ".join(
            f"{run}: {model or 'unknown'}" for run, model in found.judge_models.items()
        )
        console.print(f"The runs were judged by different models: {judged}.", markup=False)
    if out is not None:
        console.print(f"Figure: {out}", markup=False)
