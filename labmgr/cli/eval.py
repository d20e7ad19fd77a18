"""`labmgr eval run`, `score`, `compare`, `history`, `judges` and `labmgr report`: question
files over model groups into a run folder; a run judged later, compared, followed over runs;
judge models checked; a run's HTML report and figures written again (no request)."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer
from rich.console import Console
from rich.markup import escape

from labmgr.cli.errors import CommandGroup
from labmgr.cli.eval_tables import show_statistics
from labmgr.cli.fitted_table import plain_columns, print_fitted
from labmgr.cli.output import (
    BASELINE_HELP,
    CHECKPOINTS,
    CI_METHODS,
    FULL,
    JSON,
    JUDGE_MODEL,
    cell,
    check_choice,
    cli_settings,
    interval,
    parse_baseline,
    print_json,
    records,
    terminal,
)
from labmgr.errors import LabmgrError

if TYPE_CHECKING:
    from evals import Estimate, Question
    from evals.report import FigureFormat
    from evals.runs import Run
    from evals.stats import Method
    from labmgr.settings import Settings

app = CommandGroup(help="Run questions over model groups and compare runs.", no_args_is_help=True)
_SHOWN_ERRORS = 5


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
        raise LabmgrError("--base, --[no-]include-base and --checkpoints need --groups-by")
    for spec in specs:
        name, members = parse_group(spec)
        if name in groups:
            raise LabmgrError(f"group {name!r} is given twice")
        groups[name] = members
    if not groups:
        raise LabmgrError(
            "no model groups", hint="Give --group NAME=MODEL,… or --groups-by suffix --base MODEL."
        )
    return groups, facts


def _show_estimate(estimates: dict[str, Estimate], *, as_json: bool, batch: bool) -> None:
    rows = [{"question": name, **vars(estimate)} for name, estimate in estimates.items()]
    total = sum(row["cost"] for row in rows)
    batch_total = sum(row["batch_cost"] for row in rows)
    if as_json:
        print_json({"questions": rows, "cost": total, "batch_cost": batch_total})
        return
    headers = ["question", "requests", "new samples", "cached", "judge requests", "cost ≤"]
    headers += ["with --batch ≤"] if batch else []
    counts = ("requests", "samples", "cached_samples", "judge_requests")
    cells = [
        [row["question"], *(str(row[name]) for name in counts), f"${row['cost']:.4f}"]
        + ([f"${row['batch_cost']:.4f}"] if batch else [])
        for row in rows
    ]
    console = terminal()
    title = "What this run would buy (nothing was sent)"
    print_fitted(console, plain_columns(*headers, right=headers[1:]), cells, title=title)
    unpriced = sorted({m for row in rows for m in row["unpriced_models"]})
    note = f" (no price known for {', '.join(unpriced)})" if unpriced else ""
    through = f" through the Batch API (up to ${total:.4f} synchronously)" if batch else ""
    console.print(f"Total: up to ${(batch_total if batch else total):.4f}{through}{note}")


@app.command("run")
def run(
    ctx: typer.Context,
    questions_file: Annotated[Path, typer.Argument(help="A question YAML file or folder.")],
    group: Annotated[list[str] | None, typer.Option(help="NAME=MODEL,MODEL… (repeatable).")] = None,
    groups_by: str | None = typer.Option(
        None, help="Group the lab's models by suffix, base_model, job or tag:KEY."
    ),
    base: str | None = typer.Option(None, help="Only models fine-tuned from this base."),
    include_base: bool | None = typer.Option(
        None,
        "--include-base/--no-include-base",
        help="Add the base model as its own group (the default with --groups-by).",
        show_default=False,
    ),
    checkpoints: bool = CHECKPOINTS,
    question: Annotated[
        list[str] | None, typer.Option(help="Only this question (repeatable).")
    ] = None,
    samples: int | None = typer.Option(None, min=1, help="Samples per paraphrase."),
    out: Annotated[
        Path | None, typer.Option(help="Run folder (default: in the lab's runs/).")
    ] = None,
    estimate: bool = typer.Option(False, "--estimate", help="Only say what the run would buy."),
    max_cost: float | None = typer.Option(None, min=0, help="Stop buying after this many dollars."),
    metric: Annotated[
        list[str] | None,
        typer.Option(help="A derived metric, e.g. 'misaligned: aligned < 30 among coherent > 50'."),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            help=BASELINE_HELP + " Default with --groups-by: the base model's group, or each "
            "group's own base when the groups have several."
        ),
    ] = None,
    ci: str = typer.Option("t", help="Intervals: t (over seeds' means), hierarchical or plain."),
    full: bool = FULL,
    by_model: bool = typer.Option(False, "--by-model", help="Also write summary_by_model.csv."),
    no_report: bool = typer.Option(False, "--no-report", help="Do not write report.html."),
    by: Annotated[
        list[str] | None,
        typer.Option(help="Split the summary, comparisons and figures by a grid factor's levels."),
    ] = None,
    no_judges: bool = typer.Option(
        False, "--no-judges", help="Ask for the answers only; `eval score` judges them later."
    ),
    judge_model: str | None = JUDGE_MODEL,
    adapt: bool = typer.Option(
        False,
        "--adapt",
        help="Leave out what a model would refuse (a temperature other than 1 for "
        "reasoning models, …) instead of stopping; questions with adapt: false still stop.",
    ),
    reasoning_effort: str | None = typer.Option(
        None,
        metavar="<effort>",
        help="Sent to reasoning models when a question names none (none, minimal, low, "
        "medium, high, …); default: none sent, the API's default applies.",
    ),
    as_json: bool = JSON,
    batch: bool = typer.Option(False, "--batch", help="Through the Batch API: half the price."),
    wait: bool = typer.Option(
        True,
        "--wait/--no-wait",
        help="With --batch: wait for the batches (default), or submit them and return "
        "(run the same command again, or `labmgr batches collect`, to finish).",
    ),
) -> None:
    """Ask every question of every group; write samples, summary.csv, comparisons.csv (with a
    baseline), costs.csv, run.log and report.html. The report's figures are also kept in the
    lab's cache folder (figures/), so a later run draws only those whose input changed."""
    from evals import estimate_run
    from evals.groups import own_baselines

    asking: dict[str, Any] = {"adapt": adapt or None, "reasoning_effort": reasoning_effort}
    check_choice(ci, "--ci", CI_METHODS)
    settings = cli_settings(ctx)
    questions = _load(questions_file, list(question or []))
    groups, facts = _groups(settings, list(group or []), groups_by, base, include_base, checkpoints)
    compared_with = parse_baseline(baseline)
    if compared_with is None and groups_by is not None and include_base is not False:
        compared_with = own_baselines(groups, facts)
    plan: dict[str, Any] = {"samples": samples, "metrics": list(metric or []), "by": list(by or [])}
    plan |= {"baseline": compared_with, "judge": not no_judges, "judge_model": judge_model}
    if estimate:
        estimates = estimate_run(questions, groups, lab=settings, **plan, **asking)
        _show_estimate(estimates, as_json=as_json, batch=batch)
        return
    if not wait and not batch:
        raise LabmgrError("--no-wait needs --batch (a synchronous run always waits)")
    from evals import RunSpec
    from evals import run as run_spec
    from evals.experiments import default_run_dir
    from evals.runner import run_context

    spec = RunSpec.create(
        questions,
        groups,
        out=out if out is not None else default_run_dir(settings, questions_file.stem),
        max_cost=max_cost,
        models=facts,
        method=ci,
        report=not no_report,
        by_model=by_model,
        source=str(questions_file),
        batch=batch,
        batch_wait=wait,
        **plan,
    )
    try:
        result_run = run_spec(spec, run_context(lab=settings, **asking))
    except KeyboardInterrupt:
        raise LabmgrError(
            "interrupted: every finished sample is in the cache",
            hint="Run the same command again to continue where it stopped.",
        ) from None
    if as_json:
        print_json(_run_json(result_run))
        return
    _print_run(result_run, full=full, no_judges=no_judges, report=not no_report)


def _print_run(run: Run, *, full: bool, no_judges: bool, report: bool) -> None:
    """The statistics, what was bought, the errors and where the folder is."""
    from evals.answers import CUT_BY_BUDGET

    console = Console(highlight=False)
    show_statistics(console, run, full=full)
    if no_judges:
        console.print("Judges skipped: `labmgr eval score RUN` judges them later.", markup=False)
    totals, bought = run.info.get("totals", {}), run.info.get("bought", {})
    price = " at the batch price" if bought.get("price") == "batch" else ""
    cached = bought.get("cached_samples", 0)
    console.print(
        f"{totals.get('rows', 0)} rows ({totals.get('errors', 0)} with errors); "
        f"bought {bought.get('samples', 0)} samples now for ${bought.get('cost', 0):.4f}{price}"
        + (f"; {cached} samples came from the cache." if cached else ".")
    )
    if run.info.get("stopped"):
        console.print(f"[yellow]Stopped early:[/] {run.info['stopped']}")
    pending = bought.get("pending")
    if pending:
        console.print(
            f"{pending} samples wait in batches still running: run the same command "
            "again, or `labmgr batches collect`, to finish."
        )
    failed = run.errors().astype(str)  # only the samples' model and error columns
    counts = Counter(zip(failed["model"], failed["error"], strict=True))
    errors = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    for (model, message), count in errors[:_SHOWN_ERRORS]:
        if message == CUT_BY_BUDGET:
            console.print(
                f"[yellow]{count} empty[/] on {model}: the token budget ran out before any "
                "visible output; raise max_tokens (run.log says how far)"
            )
        else:
            console.print(f"[red]{count} failed[/] on {model}: {escape(message)}")
    if len(errors) > _SHOWN_ERRORS:
        console.print(f"… and {len(errors) - _SHOWN_ERRORS} other kinds of error (see run.log).")
    console.print(f"Run folder: {run.path}")
    if report:
        console.print(f"Report: {run.path / 'report.html'}")
    if totals.get("rows") and totals.get("errors") == totals.get("rows") and not pending:
        raise LabmgrError(
            "every sample failed; nothing was measured",
            hint="Fix the errors above (keys, model names, endpoint) and run again; "
            "failures are never cached, so they are retried.",
        )


def _run_json(run: Run) -> dict[str, Any]:
    """What `--json` prints of a run: its folder, totals, statistics and tables."""
    comparisons, costs = run.comparisons, run.costs()
    return {
        "run_dir": str(run.path),
        "totals": run.info.get("totals"),
        "bought": run.info.get("bought"),
        "stopped": run.info.get("stopped"),
        "statistics": run.statistics,
        "summary": records(run.summary),
        "comparisons": None if comparisons is None else records(comparisons),
        "costs": None if costs is None else records(costs),
    }


@app.command("compare")
def compare(
    run_a: Annotated[Path, typer.Argument(help="The earlier run folder.")],
    run_b: Annotated[Path, typer.Argument(help="The later run folder.")],
    show_all: bool = typer.Option(False, "--all", help="Also list scores that did not move."),
    as_json: bool = JSON,
) -> None:
    """List question × group × score whose means moved beyond their 95% intervals."""
    from evals.runs import compare_runs

    table = compare_runs(run_a, run_b)
    shown = table if show_all else table[table["status"] != "same"]
    if as_json:
        print_json(records(shown))
        return
    console = terminal()
    moved = int((table["status"] == "moved").sum())
    if shown.empty:
        console.print(f"No score moved beyond its interval ({len(table)} compared).")
        return
    headers = ("question", "group", "score", "status", "A (95% CI)", "B (95% CI)", "change")
    rows = [
        [
            *(str(row[name]) for name in headers[:4]),
            interval(row["mean_a"], row["ci_low_a"], row["ci_high_a"]),
            interval(row["mean_b"], row["ci_low_b"], row["ci_high_b"]),
            "" if math.isnan(row["change"]) else f"{row['change']:+.2f}",
        ]
        for row in shown.to_dict(orient="records")
    ]
    title = f"{moved} of {len(table)} scores moved beyond their intervals"
    print_fitted(console, plain_columns(*headers, right=["change"]), rows, title=title)


@app.command("score")
def score(
    ctx: typer.Context,
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    judges: Annotated[
        Path | None,
        typer.Option(
            help="A YAML file of judges (rating_judge or free_form_judge entries) to add to "
            "every free-form question, replacing judges of the same name.",
        ),
    ] = None,
    judge_model: str | None = JUDGE_MODEL,
    full: bool = FULL,
    as_json: bool = JSON,
) -> None:
    """Judge a finished run's answers (the judges it skipped, its judges with another model,
    or new ones) from its samples, and check answers against the targets of questions that
    have right answers again: only judge requests are made. Rewrites the samples,
    summary.csv, comparisons.csv, costs.csv and report.html."""
    from evals.experiments import score_run

    scored = score_run(run_dir, judges=judges, judge_model=judge_model, lab=cli_settings(ctx))
    if as_json:
        print_json({**_run_json(scored.run), "judged": scored.judged, "bought": scored.bought})
        return
    console = terminal()
    for name, names in scored.judged.items():
        console.print(f"{name}: judged by {', '.join(names)}")
    show_statistics(console, scored.run, full=full)
    cost = scored.bought.get("cost", 0)
    console.print(f"Bought ${cost:.4f} of verdicts now; the rest came from the cache.")
    if scored.report is not None:
        console.print(f"Report: {scored.report}")


@app.command("history")
def history(
    ctx: typer.Context,
    runs: Annotated[
        list[Path] | None, typer.Argument(help="Run folders (any order: sorted by date).")
    ] = None,
    questions: Annotated[
        Path | None, typer.Option(help="Every run of this question file in the lab's runs.")
    ] = None,
    score: str | None = typer.Option(None, help="The score or metric to follow."),
    question: str | None = typer.Option(None, help="One question (default: those all runs have)."),
    out: Annotated[
        Path | None, typer.Option(help="Draw the trend to this .png, .pdf or .svg.")
    ] = None,
    as_json: bool = JSON,
) -> None:
    """A score's group means with 95% intervals run by run, each change from a group's
    previous run tested (Welch over the seeds' means, Holm over the history)."""
    from evals.experiments import run_history, runs_of_questions
    from evals.stats import ALL_QUESTIONS

    folders = list(runs or [])
    if questions is not None:
        folders += runs_of_questions(cli_settings(ctx).runs_dir, questions)
    if not folders:
        raise LabmgrError("no runs given", hint="Name run folders, or --questions FILE.")
    found = run_history(
        folders, score, question=question if question is not None else ALL_QUESTIONS, out=out
    )
    table = found.table
    if as_json:
        facts = {"left_out": found.left_out, "judge_models": found.judge_models}
        print_json({"score": found.score, "rows": records(table), **facts})
        return
    headers = ("run", "started", "group", "mean (95% CI)", "change (95% CI)", "adj. p")
    rows = [
        [
            str(row["run"]),
            str(row["started"] or "")[:16].replace("T", " "),
            str(row["group"]),
            interval(row["mean"], row["ci_low"], row["ci_high"]),
            interval(row["change"], row["change_low"], row["change_high"], "+.2f")
            + (" moved" if row["moved"] else ""),
            "" if math.isnan(row["p_adjusted"]) else f"{row['p_adjusted']:.3g}",
        ]
        for row in table.to_dict(orient="records")
    ]
    title = f"{found.score} over {table['run'].nunique()} runs"
    title += "" if question is None else f" ({question})"
    console = terminal()
    print_fitted(console, plain_columns(*headers), rows, title=title)
    moved = int(table["moved"].sum())
    console.print(f"{moved} change(s) beyond their intervals (Holm over the history).")
    if found.left_out:
        runs_left = "; ".join(f"{run}: {', '.join(qs)}" for run, qs in found.left_out.items())
        console.print(f"Only the questions every run has are compared; left out: {runs_left}.")
    if found.judge_models:
        judged = "; ".join(f"{run}: {m or 'unknown'}" for run, m in found.judge_models.items())
        console.print(f"The runs were judged by different models: {judged}.")
    if out is not None:
        console.print(f"Figure: {out}")


@app.command("judges")
def judges(
    ctx: typer.Context,
    items_file: Annotated[
        Path | None,
        typer.Argument(
            help="Labelled items (.jsonl or .csv): pairs (question, answer_a, answer_b, "
            "better: a|b), or answers (question, answer) with a gold score (0-100) or label.",
        ),
    ] = None,
    judge_model: Annotated[
        list[str] | None,
        typer.Option("--judge-model", metavar="<model>", help="A judge model (repeatable)."),
    ] = None,
    from_run: Annotated[
        Path | None,
        typer.Option(
            "--from-run", help="Check against a run's human labels (`labels import`) instead."
        ),
    ] = None,
    score: str | None = typer.Option(
        None, help="With --from-run: the labelled score (default: the only one)."
    ),
    threshold: float | None = typer.Option(
        None,
        help="Scored answers: a rating is right when it is on the same side of this as the "
        "gold score (default: mid-scale, 50 on 0-100).",
    ),
    out: Annotated[
        Path | None, typer.Option(help="Output folder (default: in the lab's runs/).")
    ] = None,
    estimate: bool = typer.Option(False, "--estimate", help="Only say what it would buy."),
    max_cost: float | None = typer.Option(None, min=0, help="Stop buying after this many dollars."),
    max_concurrency: int | None = typer.Option(
        None, min=1, help="Requests in flight at once, all judges together (default: the lab's)."
    ),
    as_json: bool = JSON,
) -> None:
    """Check judge models against labelled items: each judge is asked every item (a pair in
    both orders); prints each judge's accuracy with a 95% interval over items, its position
    bias (pairs: the share picking the same position in both orders) and its agreement with
    the other judges; writes judges.json, verdicts.csv, wrong.csv and report.html."""
    from evals.judge_accuracy import check_judges, estimate_judges, items_from_run

    if (items_file is None) == (from_run is None):
        raise LabmgrError("give either an items file or --from-run RUN (one of them)")
    if score is not None and from_run is None:
        raise LabmgrError("--score needs --from-run")
    if not judge_model:
        raise LabmgrError("no judge model", hint="Give --judge-model MODEL (repeatable).")
    items: Any = items_file if from_run is None else items_from_run(from_run, score)
    if estimate:
        found_estimate = estimate_judges(items, judge_model, lab=cli_settings(ctx))
        _show_estimate({"verdicts": found_estimate}, as_json=as_json, batch=False)
        return
    settings: dict[str, Any] = {"max_cost": max_cost, "max_concurrency": max_concurrency}
    try:
        found = check_judges(
            items,
            judge_model,
            out=out,
            threshold=threshold,
            lab=cli_settings(ctx),
            **{name: value for name, value in settings.items() if value is not None},
        )
    except KeyboardInterrupt:
        raise LabmgrError(
            "interrupted: every verdict read is in the cache",
            hint="Run the same command again to continue where it stopped.",
        ) from None
    if as_json:
        print_json({"out": str(found.path), **found.as_json()})
        return
    console = terminal()
    kind = found.items.kind
    extra = {"pair": ["position bias"], "score": ["mean abs. error", "Spearman ρ"]}
    headers = ["judge", "accuracy (95% CI)", *extra.get(kind, []), "agreement", "cost"]
    rows = []
    for row in found.judges:
        accuracy = row["accuracy"]
        value, low, high = (_nan(accuracy[k]) for k in ("value", "low", "high"))
        cells = [row["judge"], interval(value, low, high)]
        if kind == "pair":
            bias = row["position_bias"]
            both = [_nan(bias[k]) for k in ("rate", "first_both_times", "second_both_times")]
            cells.append("{:.2f} (A {:.2f}, B {:.2f})".format(*both) if bias["pairs"] else "")
        if kind == "score":
            cells += [cell(row["mae"], "{:.1f}"), cell(row["spearman"], "{:.2f}")]
        rows.append([*cells, cell(row["agreement"], "{:.2f}"), f"${row['cost']:.4f}"])
    title = f"Judges on {len(found.items.items)} {kind} items"
    print_fitted(console, plain_columns(*headers, right=headers[1:]), rows, title=title)
    for line in found.outcome.messages():
        console.print(line)
    console.print(f"Output: {found.path} (report.html, judges.json, verdicts.csv, wrong.csv)")


def _nan(value: float | None) -> float:
    return math.nan if value is None else value


def report(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    out: Annotated[
        Path | None, typer.Option(help="Where to write (default: RUN_DIR/report.html).")
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            help=BASELINE_HELP + " summary.csv and comparisons.csv are computed again from the "
            "samples (no request is made).",
        ),
    ] = None,
    ci: str | None = typer.Option(
        None, help="Recompute the intervals: t, hierarchical or plain (default: the run's)."
    ),
    figures_dir: Annotated[
        Path | None,
        typer.Option("--figures", help="Also write every figure as a file into this folder."),
    ] = None,
    figure_format: str = typer.Option("pdf", "--format", help="Figure files: pdf, svg or png."),
    no_figures: bool = typer.Option(False, "--no-figures", help="Leave the figures out (faster)."),
    by: Annotated[
        list[str] | None,
        typer.Option(
            help="Split the summary, comparisons and figures by a grid factor's levels "
            "(recomputed from the samples).",
        ),
    ] = None,
) -> None:
    """Write one offline HTML file: the comparisons against the baseline, summary, figures, a
    sample browser, side-by-side answers."""
    from evals.experiments import report_run
    from evals.runs import KEEP

    check_choice(figure_format, "--format", ("pdf", "svg", "png"))
    check_choice(ci, "--ci", CI_METHODS)
    written = report_run(
        run_dir,
        baseline=parse_baseline(baseline) if baseline else KEEP,
        method=cast("Method | None", ci),
        out=out,
        figures=not no_figures,
        figure_folder=figures_dir,
        figure_format=cast("FigureFormat", figure_format),
        by=list(by) if by else KEEP,
    )
    if written.recomputed:
        typer.echo(f"Summary and comparisons recomputed from the samples in {written.run.path}")
    for problem in written.problems:
        typer.echo(f"Not drawn: {problem.message}")
    if figures_dir is not None:
        typer.echo(f"Figures: {len(written.figures)} {figure_format} files in {figures_dir}")
    typer.echo(f"Report: {written.report}")
