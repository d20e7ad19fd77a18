"""The report page: the headline (each group against the baseline, in words and as figures),
run facts, cost, the summary table, a section per question with its figures, then the sample
browser and the side-by-side view (driven by static/report.js).

Every value from the run (names, prompts, model ids) is escaped with `html.escape`; samples
travel only as JSON data. A Content-Security-Policy allows no network access and only the
page's own script (by its hash), so even an unescaped handler could not run.
"""

from __future__ import annotations

import base64
import hashlib
import math
from collections.abc import Callable, Container, Iterable, Sequence
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

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

NUM = " class='num'"
CI = ("mean", "ci_low", "ci_high")


def _static(name: str) -> str:
    return resources.files("evals.report").joinpath("static", name).read_text(encoding="utf-8")


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


def _table(
    head: Sequence[str],
    rows: Iterable[Sequence[str]],
    numeric: Container[int],
    table_id: str = "",
    classes: Sequence[str] = (),
) -> str:
    """A table in a scrolling box: `head` escaped here, each row's cells HTML already, the
    columns at `numeric` right-aligned numbers, row i of class `classes[i]` if given."""

    def cells(values: Sequence[str], tag: str) -> str:
        return "".join(
            f"<{tag}{NUM if i in numeric else ''}>{v}</{tag}>" for i, v in enumerate(values)
        )

    starts = [f"<tr class='{c}'>" for c in classes]
    body = "".join(
        f"{starts[i] if starts else '<tr>'}{cells(r, 'td')}</tr>" for i, r in enumerate(rows)
    )
    ident = f" id='{table_id}'" if table_id else ""
    return (
        f"<div class='scroll'><table{ident}><thead><tr>{cells([escape(h) for h in head], 'th')}"
        f"</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _facts(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def _run_facts(run: Run) -> str:
    info = run.info
    totals = info.get("totals", {})
    bought = info.get("bought", {})
    stats = run.statistics
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
        ("95% intervals", _interval_text(stats)),
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
    return _facts(pairs)


def _interval_text(stats: dict[str, Any]) -> str:
    method = str(stats.get("method", "hierarchical"))
    text = describe_method(method)
    if method != "t":
        text += f" ({stats.get('resamples', '')} resamples, seed {stats.get('seed', '')})"
    return text


def _summary_table(summary: pd.DataFrame, by: list[str]) -> str:
    if summary.empty:
        return "<p class='muted'>No question has a numeric score (ratings or rating judges).</p>"
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
                escape(question),
                *(escape("" if pd.isna(row[name]) else str(row[name])) for name in factors),
                escape(str(row["group"])),
                escape("rating" if row["score"] == "answer" else str(row["score"])),
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


def _figures(drawn: FigureSet | None, chosen: Callable[[str], bool]) -> str:
    """The drawn figures `chosen` by name, then a note for each of them not drawn."""
    if drawn is None:
        return ""
    shown = "".join(
        f"<figure><img alt='{escape(f.caption)}' src='{f.data_uri}'>"
        f"<figcaption>{escape(f.caption)}</figcaption></figure>"
        for f in drawn.embedded
        if chosen(f.name)
    )
    notes = (f"<p class='muted'>{escape(p.message)}</p>" for p in drawn.problems if chosen(p.name))
    return shown + "".join(notes)


def _question_section(run: Run, name: str, index: int, drawn: FigureSet | None) -> str:
    info = run.question_info(name)
    prompts = info.get("prompts", [])
    totals = info.get("totals", {})
    prefix = question_figure_prefix(run, name)
    metrics = "; ".join(str(metric) for metric in run.metrics(name))
    shown = "".join(f"<div class='prompt'>{escape(str(p))}</div>" for p in prompts[:3])
    more = f"<p class='muted'>and {len(prompts) - 3} more prompts</p>" if len(prompts) > 3 else ""
    facts = _facts(
        [
            ("type", str(info.get("type", ""))),
            ("scores", ", ".join(info.get("scores", [])) or "none"),
            ("metrics", metrics or "none"),
            (
                "judges",
                ", ".join(f"{k} ({v})" for k, v in info.get("judges", {}).items()) or "none",
            ),
            ("samples", f"{totals.get('rows', 0):,} ({totals.get('errors', 0):,} with errors)"),
            ("list price", f"${totals.get('list_cost', totals.get('cost', 0)):,.4f}"),
        ]
    )
    return (
        f"<section class='question' id='question-{index}'><h3>{escape(name)}</h3>{facts}"
        f"{shown}{more}{_figures(drawn, lambda f: f.startswith(prefix))}</section>"
    )


def _money(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "no price"
    return f"${float(value):,.4f}"


def _interval_cell(value: Any, low: Any, high: Any) -> str:
    if value is None or math.isnan(float(value)):
        return "n/a"
    return f"{float(value):.2f} [{float(low):.2f}, {float(high):.2f}]"


def _agreement_section(run: Run) -> str:
    """How far each judge agrees with the human labels, and the answers they disagree on
    most (every value escaped: answers are untrusted text)."""
    agreement = run.agreement()
    if agreement is None or agreement.empty:
        return ""
    rows = [
        [
            escape("all questions" if r["question"] == ALL_QUESTIONS else r["question"]),
            escape(str(r["score"])),
            str(int(r["n"])),
            _number(r["judge_mean"], 1),
            _number(r["human_mean"], 1),
            _interval_cell(r["spearman"], r["spearman_low"], r["spearman_high"]),
            _interval_cell(r["kappa"], r["kappa_low"], r["kappa_high"]),
            escape(str(r["bins"])) + (" (linear weights)" if r["weights"] == "linear" else ""),
        ]
        for r in agreement.to_dict("records")
    ]
    head = ["question", "score", "labelled", "judge mean", "human mean"]
    head += ["Spearman ρ [95% CI]", "Cohen's κ [95% CI]", "κ's bins"]
    items = "".join(
        f"<li><code>{escape(str(r['id']))}</code> {escape(str(r['question']))}, "
        f"{escape(str(r['score']))}: judge {r['judge']:.0f}, human {r['human']:.0f}"
        f"<div class='prompt'>{escape(str(r['prompt']))}</div>"
        f"<div class='prompt'>{escape(str(r['answer']))}</div></li>"
        for r in disagreements(run, 10).to_dict("records")
    )
    return (
        "<section id='agreement'><h2>Judges against human labels</h2>"
        f"{_table(head, rows, range(2, 7), 'agreement-table')}<p class='muted'>ρ: rank "
        "agreement, its interval Fisher's z with Bonett and Wright's variance; κ: agreement on "
        "the score's bins (cut at the thresholds the run's metrics use, else the middle of the "
        "scale), its interval a BCa bootstrap, given when each bin holds at least 5 answers of "
        "both. Both treat the labelled answers as independent.</p><h3>The largest "
        f"disagreements</h3><ol class='disagreements'>{items}</ol></section>"
    )


def _cost_section(run: Run, drawn: FigureSet | None) -> str:
    """Per group and model: answer and judge cost per sample and per 1,000 samples beside
    the headline score with its interval, and the score-against-cost figure."""
    costs = run.costs()
    if costs is None or costs.empty:
        return ""
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
                escape(str(row["group"]) if whole else f"  {row['model']}"),
                _number(int(row["n_samples"])),
                _money(row["answer_cost_per_sample"]),
                _money(row["answer_cost_per_1k"]),
                _money(row["judge_cost_per_1k"]),
                f"{escape(mean)} {escape(bounds)}",
            ]
        )
    head = ["group / model", "samples", "answer cost per sample", "answers per 1,000"]
    head += ["judges per 1,000", f"{score or 'score'} (95% CI)"]
    table = _table(head, rows, range(1, 6), "cost-table", levels)
    return (
        f"<section id='costs'><h2>Cost against score</h2>{table}"
        "<p class='muted'>Answer cost: the price of each sample's tokens, whether bought now or "
        "read from the cache; judge cost: each verdict's price shared among the answers it "
        "grades. The score is over all the run's questions, its interval as in the summary (a "
        f"model's own: sampling noise only).</p>{_figures(drawn, COST_FIGURE.__eq__)}</section>"
    )


def _headline_section(run: Run, drawn: FigureSet | None) -> str:
    """The comparisons against the baseline in words (pooled rows first, then the largest
    per-question differences) and the headline figures, before any detail."""
    comparisons = run.comparisons
    shown = _figures(
        drawn, lambda f: not f.startswith("question-") and f not in (CURVES_FIGURE, COST_FIGURE)
    )
    if comparisons is None or run.baseline is None:
        return (
            "<section id='headline'><h2>Headline</h2><p class='muted'>No baseline: the groups "
            "are not compared. <code>labmgr report RUN --baseline GROUP</code> compares every "
            f"group with one of them, from the samples, without asking anything.</p>{shown}"
            "</section>"
        )
    baseline = baseline_words(run.baseline)
    rows = headline_comparisons(comparisons)
    is_pooled = rows["question"] == ALL_QUESTIONS
    lists = ""
    for part, heading in (
        (rows[is_pooled], "Over all questions"),
        (rows[~is_pooled], "The largest differences on single questions"),
    ):
        if not part.empty:
            said = "".join(
                f"<li>{escape(comparison_sentence(r))}</li>" for r in part.to_dict("records")
            )
            lists += f"<h3>{heading}</h3><ul class='headline'>{said}</ul>"
    if not lists:
        lists = "<p class='muted'>No group could be compared (no numeric score).</p>"
    method = str(run.statistics.get("method", "hierarchical"))
    lone = [g for g, models in run.groups.items() if len(models) == 1]
    lone_note = (
        f" {', '.join(lone)} {'is a group' if len(lone) == 1 else 'are groups'} of one model: "
        "its side of a difference reflects sampling noise only."
        if lone
        else ""
    )
    note = (
        f"<p class='muted' id='headline-note'>Differences from {escape(baseline)} with 95% "
        "intervals: Welch's t test over the seeds' means (Cochran–Cox when a side has one "
        f"model); p-values Holm-adjusted over all {len(comparisons)} comparisons of the run "
        f"(every question, score and metric, and the rows over all questions). Group "
        f"intervals: {escape(describe_method(method))}.{escape(lone_note)}</p>"
    )
    return (
        f"<section id='headline'><h2>Against {escape(baseline)}</h2>{lists}{note}{shown}</section>"
    )


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
    curves = _figures(drawn, CURVES_FIGURE.__eq__)
    costs, agreement = _cost_section(run, drawn), _agreement_section(run)
    sections = [
        ("headline", "Headline"),
        ("summary", "Summary"),
        ("questions", "Questions"),
        *([("costs", "Cost against score")] if costs else []),
        *([("agreement", "Judges against humans")] if agreement else []),
        ("samples", "Samples"),
        ("compare", "Side by side"),
    ]
    nav = "".join(f'<a href="#{anchor}">{escape(name)}</a>' for anchor, name in sections)
    body = [
        _headline_section(run, drawn),
        "<section id='summary'><h2>Run</h2>",
        _run_facts(run),
        "<h3>Groups</h3>",
        _table(
            ["group", "models", "model ids"],
            ([escape(g), str(len(m)), escape(", ".join(m))] for g, m in run.groups.items()),
            {1},
        ),
        "<h3>Summary</h3>",
        _summary_table(run.summary, run.by),
        "<p class='muted' id='summary-note'>95% intervals: "
        f"{escape(_interval_text(run.statistics))}. † a group of one model: its interval "
        "reflects sampling noise only, not how another seed would score. A metric is a share "
        "(0–1) computed per model, then averaged over the group's models. The rows of "
        "<em>all questions</em> average each model over the questions first. Answers and judges "
        "per 1,000: what 1,000 samples of the row cost, in dollars.</p>",
        "<h3>Training curves</h3>" + curves if curves else "",
        "</section>",
        "<section id='questions'><h2>Questions</h2>",
        *(_question_section(run, name, i, drawn) for i, name in enumerate(run.questions)),
        "</section>",
        costs,
        agreement,
    ]
    page = Template(_static("page.html"))
    return page.substitute(
        csp=csp,
        title=escape(title or report_title(run)),
        nav=nav,
        css=_static("report.css"),
        body="\n".join(body),
        data=safe_json(build_payload(run)),
        script=script,
    )
