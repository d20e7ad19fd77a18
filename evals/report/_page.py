"""The report page; every value from the run is escaped and samples travel only as JSON data,
under a Content-Security-Policy that allows no network and only the page's own script."""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Callable, Container, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
from jinja2 import Environment, PackageLoader
from markupsafe import Markup

from evals.report._figures import FigureSet, FigureStore, draw_figures, figure_digests
from evals.report._payload import build_payload, safe_json
from evals.report._plans import COST_FIGURE, CURVES_FIGURE, question_figure_prefix, run_plans
from evals.runs import Run, disagreements
from evals.stats import (
    ALL_QUESTIONS,
    baseline_words,
    comparison_sentence,
    describe_method,
    digits_for,
    format_value,
    headline_comparisons,
    headline_score,
)

CI = ("mean", "ci_low", "ci_high")
_PAGE = Environment(
    loader=PackageLoader("evals.report", "static"), autoescape=True, trim_blocks=True
)


def _static(name: str) -> str:
    return resources.files("evals.report").joinpath("static", name).read_text(encoding="utf-8")


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def _table(
    head: Sequence[str],
    rows: list[list[str]],
    numeric: Container[int],
    table_id: str = "",
    classes: Sequence[str] = (),
) -> dict[str, Any]:
    """A table for the page: its columns at `numeric` right-aligned, row i of class
    `classes[i]` if given (the page escapes every cell)."""
    return {"head": head, "rows": rows, "numeric": numeric, "id": table_id, "classes": classes}


def _run_facts(run: Run) -> list[tuple[str, str]]:
    info = run.info
    totals = info.get("totals", {})
    bought = info.get("bought", {})
    pairs = [
        ("run folder", str(run.path.name)),
        ("questions", ", ".join(run.questions)),
        ("groups", f"{len(run.groups)} ({sum(len(m) for m in run.groups.values())} model slots)"),
        ("started", str(info.get("started", ""))),
        ("finished", str(info.get("finished", ""))),
        ("samples", f"{totals.get('rows', 0):,} ({totals.get('errors', 0):,} with errors)"),
        (
            "tokens",
            f"{totals.get('prompt_tokens', 0):,.0f} prompt, "
            f"{totals.get('completion_tokens', 0):,.0f} completion",
        ),
        (
            "the samples at list price",
            f"${totals.get('list_cost', totals.get('cost', 0)):,.4f} (judges not included)",
        ),
        (
            "paid by this run",
            f"${bought.get('cost', 0):,.4f} for {bought.get('samples', 0):,} samples bought "
            f"(judges included), {bought.get('cached_samples', 0):,} from the cache",
        ),
        ("95% intervals", _interval_text(run)),
        (
            "baseline",
            baseline_words(run.baseline)
            if run.baseline
            else "none (pass --baseline GROUP to compare the groups)",
        ),
        ("labmgr", str(info.get("versions", {}).get("labmgr", ""))),
    ]
    settings = info.get("settings") or {}
    if settings.get("judges") == "skipped":
        pairs.append(("judges", "skipped: `labmgr eval score RUN` judges the answers later"))
    if settings.get("judge_model"):
        pairs.append(("judge model", f"{settings['judge_model']} (every judge)"))
    for scored in info.get("scored") or []:
        judged = "; ".join(f"{q}: {', '.join(j)}" for q, j in dict(scored.get("judges")).items())
        model = f" with {scored['judge_model']}" if scored.get("judge_model") else ""
        pairs.append(("scored later", f"{scored.get('at', '')}{model} ({judged})"))
    if run.by:
        pairs.append(("split by", ", ".join(run.by)))
    if info.get("stopped"):
        pairs.append(("stopped early", str(info["stopped"])))
    if info.get("source"):
        pairs.insert(0, ("questions file", str(info["source"])))
    return pairs


def _interval_text(run: Run) -> str:
    method, stats = run.method, run.statistics
    text = describe_method(method)
    if method != "t":
        text += f" ({stats.get('resamples', '')} resamples, seed {stats.get('seed', '')})"
    return text


def _summary_table(summary: pd.DataFrame, by: list[str]) -> dict[str, Any] | None:
    if summary.empty:
        return None
    factors = [name for name in by if name in summary.columns]
    head = ["question", *factors, "group", "score", "models", "samples", "mean", "95% CI"]
    head += ["refusal rate", "errors", "answers per 1,000", "judges per 1,000"]
    rows = []
    for row in summary.to_dict(orient="records"):
        low, high = row["ci_low"], row["ci_high"]
        digits = 3 if float(row.get("scale_high", 100)) - float(row.get("scale_low", 0)) <= 1 else 2
        rate = row["refusal_rate"]
        question = "all questions" if row["question"] == ALL_QUESTIONS else str(row["question"])
        alone = "†" if str(row.get("sampling_only")).lower() == "true" else ""
        rows.append(
            [
                question,
                *("" if pd.isna(row[name]) else str(row[name]) for name in factors),
                str(row["group"]),
                "rating" if row["score"] == "answer" else str(row["score"]),
                _number(int(row["n_models"])) + alone,
                _number(int(row["n_samples"])),
                _number(row["mean"], digits),
                "" if math.isnan(low) else f"{_number(low, digits)} – {_number(high, digits)}",
                "" if math.isnan(rate) else f"{rate:.1%}",
                _number(int(row["n_errors"])),
                _money(row.get("answer_cost_per_1k")),
                _money(row.get("judge_cost_per_1k")),
            ]
        )
    return _table(head, rows, range(3 + len(factors), len(head)), "summary-table")


def _figures(drawn: FigureSet | None, chosen: Callable[[str], bool]) -> dict[str, list[Any]]:
    """The drawn figures `chosen` by name, and a note for each of them not drawn."""
    if drawn is None:
        return {"figures": [], "notes": []}
    return {
        "figures": [f for f in drawn.embedded if chosen(f.name)],
        "notes": [p.message for p in drawn.problems if chosen(p.name)],
    }


def _question(run: Run, name: str, drawn: FigureSet | None) -> dict[str, Any]:
    info = run.question_info(name)
    totals = info.get("totals", {})
    prefix = question_figure_prefix(run, name)
    judges = ", ".join(f"{k} ({v})" for k, v in info.get("judges", {}).items())
    facts = [
        ("type", str(info.get("type", ""))),
        ("scores", ", ".join(info.get("scores", [])) or "none"),
        ("metrics", "; ".join(str(metric) for metric in run.metrics(name)) or "none"),
        ("judges", judges or "none"),
        ("samples", f"{totals.get('rows', 0):,} ({totals.get('errors', 0):,} with errors)"),
        ("list price", f"${totals.get('list_cost', totals.get('cost', 0)):,.4f}"),
    ]
    return {
        "name": name,
        "facts": facts,
        "prompts": [str(p) for p in info.get("prompts", [])],
        "figures": _figures(drawn, lambda f: f.startswith(prefix)),
    }


def _money(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "no price"
    return f"${float(value):,.4f}"


def _interval_cell(value: Any, low: Any, high: Any) -> str:
    if value is None or math.isnan(float(value)):
        return "n/a"
    return f"{float(value):.2f} [{float(low):.2f}, {float(high):.2f}]"


def _agreement(run: Run) -> dict[str, Any] | None:
    """How far each judge agrees with the human labels, and the answers they disagree on
    most."""
    agreement = run.agreement()
    if agreement is None or agreement.empty:
        return None
    rows = [
        [
            "all questions" if r["question"] == ALL_QUESTIONS else str(r["question"]),
            str(r["score"]),
            str(int(r["n"])),
            _number(r["judge_mean"], 1),
            _number(r["human_mean"], 1),
            _interval_cell(r["spearman"], r["spearman_low"], r["spearman_high"]),
            _interval_cell(r["kappa"], r["kappa_low"], r["kappa_high"]),
            str(r["bins"]) + (" (linear weights)" if r["weights"] == "linear" else ""),
        ]
        for r in agreement.to_dict("records")
    ]
    head = ["question", "score", "labelled", "judge mean", "human mean"]
    head += ["Spearman ρ [95% CI]", "Cohen's κ [95% CI]", "κ's bins"]
    return {
        "table": _table(head, rows, range(2, 7), "agreement-table"),
        "disagreements": disagreements(run, 10).to_dict("records"),
    }


def _costs(run: Run, drawn: FigureSet | None) -> dict[str, Any] | None:
    """Per group and model: answer and judge cost per sample and per 1,000 samples beside
    the headline score with its interval, and the score-against-cost figure."""
    costs = run.costs()
    if costs is None or costs.empty:
        return None
    scored = costs[costs["score"].notna()]
    score = headline_score(scored["score"]) if not scored.empty else None
    rows, levels = [], []
    shown = scored[scored["score"] == score] if score is not None else costs
    for row in shown.to_dict("records"):
        whole = row["level"] == "group"
        digits = digits_for(float(row.get("scale_low", 0)), float(row.get("scale_high", 100)))
        mean, low, high = (format_value(float(row.get(c, math.nan)), digits) for c in CI)
        bounds = "" if low == "n/a" else f"[{low}, {high}]"
        levels.append("group" if whole else "model")
        rows.append(
            [
                str(row["group"]) if whole else f"  {row['model']}",
                _number(int(row["n_samples"])),
                _money(row["answer_cost_per_sample"]),
                _money(row["answer_cost_per_1k"]),
                _money(row["judge_cost_per_1k"]),
                f"{mean} {bounds}",
            ]
        )
    head = ["group / model", "samples", "answer cost per sample", "answers per 1,000"]
    head += ["judges per 1,000", f"{score or 'score'} (95% CI)"]
    return {
        "table": _table(head, rows, range(1, 6), "cost-table", levels),
        "figures": _figures(drawn, COST_FIGURE.__eq__),
    }


def _headline(run: Run) -> list[tuple[str, list[str]]]:
    """The comparisons against the baseline in words: pooled rows first, then the largest
    per-question differences."""
    if run.comparisons is None:
        return []
    rows = headline_comparisons(run.comparisons)
    is_pooled = rows["question"] == ALL_QUESTIONS
    parts = [
        ("Over all questions", rows[is_pooled]),
        ("The largest differences on single questions", rows[~is_pooled]),
    ]
    return [
        (heading, [comparison_sentence(r) for r in part.to_dict("records")])
        for heading, part in parts
        if not part.empty
    ]


def report_title(run: Run) -> str:
    """What the report is about: its questions' source (the file, or e.g. `labmgr demo`),
    else the run folder's name, and when it ran."""
    source = str(run.info.get("source") or "")
    subject = source.rsplit("/", 1)[-1] if source.endswith((".yaml", ".yml")) else source
    subject = subject or run.path.name
    started = str(run.info.get("started") or "")[:10]
    return f"Eval report: {subject}" + (f" ({started})" if started else "")


def render_report(
    run: Run,
    *,
    title: str | None = None,
    figures: bool | FigureSet = True,
    figure_store: Path | None = None,
) -> str:
    """The report of `run` as one self-contained HTML document (`figures=False` leaves the
    figures out, which is faster; a `FigureSet` already drawn is used as it is). Figures are
    drawn in parallel processes; with `figure_store` (a folder) they are kept there and
    reused while their input is unchanged."""
    script = _static("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
    if isinstance(figures, FigureSet):
        drawn: FigureSet | None = figures
    else:
        drawn = None
        if figures:
            plans = run_plans(run)
            store = FigureStore(figure_store, figure_digests(run, plans)) if figure_store else None
            drawn = draw_figures(plans, store=store)
    costs, agreement = _costs(run, drawn), _agreement(run)
    sections = [
        ("headline", "Headline"),
        ("summary", "Summary"),
        ("questions", "Questions"),
        *([("costs", "Cost against score")] if costs else []),
        *([("agreement", "Judges against humans")] if agreement else []),
        ("samples", "Samples"),
        ("compare", "Side by side"),
    ]
    baseline, comparisons = run.baseline, run.comparisons
    if baseline is None or comparisons is None:
        baseline, comparisons = None, None
    lone = [g for g, models in run.groups.items() if len(models) == 1]
    return _PAGE.get_template("page.html").render(
        csp=Markup(csp),
        title=title or report_title(run),
        nav=sections,
        css=Markup(_static("report.css")),
        headline_figures=_figures(
            drawn, lambda f: not f.startswith("question-") and f not in (CURVES_FIGURE, COST_FIGURE)
        ),
        baseline=None if baseline is None else baseline_words(baseline),
        headline=_headline(run),
        n_comparisons=0 if comparisons is None else len(comparisons),
        method=describe_method(run.method),
        lone=lone,
        run_facts=_run_facts(run),
        groups=_table(
            ["group", "models", "model ids"],
            [[g, str(len(m)), ", ".join(m)] for g, m in run.groups.items()],
            {1},
        ),
        summary=_summary_table(run.summary, run.by),
        intervals=_interval_text(run),
        curves=_figures(drawn, CURVES_FIGURE.__eq__),
        questions=[_question(run, name, drawn) for name in run.questions],
        costs=costs,
        agreement=agreement,
        data=Markup(safe_json(build_payload(run))),
        script=Markup(script),
    )
