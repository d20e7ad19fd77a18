"""The report page: run facts, cost, the summary table, a section per question with its
figures, then the sample browser and the side-by-side view (driven by static/report.js).

Every value from the run (names, prompts, model ids) is escaped with `html.escape`; samples
travel only as JSON data. A Content-Security-Policy allows no network access and only the
page's own script (by its hash), so even an unescaped handler could not run.
"""

from __future__ import annotations

import base64
import hashlib
import math
from html import escape
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from evals.report._figures import (
    EmbeddedFigure,
    curves_figure,
    draw_figures,
    headline_figure,
)
from evals.report._payload import build_payload, safe_json
from evals.runs import Run

__all__ = ["render_report", "report_title"]


def _static(name: str) -> str:
    return resources.files("evals.report").joinpath("static", name).read_text(encoding="utf-8")


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return f"{value:,}" if isinstance(value, int) else escape(str(value))


def _facts(pairs: list[tuple[str, str]]) -> str:
    items = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in pairs)
    return f'<dl class="facts">{items}</dl>'


def _run_facts(run: Run) -> str:
    info = run.info
    totals = info.get("totals", {})
    bought = info.get("bought", {})
    stats = info.get("settings", {}).get("statistics", {})
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
        ("cost of the samples", f"${totals.get('cost', 0):,.4f} (judges not included)"),
        (
            "bought by this run",
            f"${bought.get('cost', 0):,.4f} (judges included; the rest came from the cache)",
        ),
        (
            "intervals",
            f"{stats.get('method', 'hierarchical')} bootstrap, "
            f"{stats.get('resamples', '')} resamples, seed {stats.get('seed', '')}",
        ),
        ("labmgr", str(info.get("versions", {}).get("labmgr", ""))),
    ]
    if info.get("stopped"):
        pairs.append(("stopped early", str(info["stopped"])))
    if info.get("source"):
        pairs.insert(0, ("questions file", str(info["source"])))
    return _facts(pairs)


def _groups_table(run: Run) -> str:
    rows = "".join(
        f"<tr><td>{escape(g)}</td><td class='num'>{len(m)}</td><td>{escape(', '.join(m))}</td></tr>"
        for g, m in run.groups.items()
    )
    return (
        "<div class='scroll'><table><thead><tr><th>group</th><th class='num'>models</th>"
        f"<th>model ids</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _summary_table(summary: pd.DataFrame) -> str:
    if summary.empty:
        return "<p class='muted'>No question has a numeric score (ratings or rating judges).</p>"
    head = "".join(
        f"<th class='num'>{escape(c)}</th>" if i > 2 else f"<th>{escape(c)}</th>"
        for i, c in enumerate(
            [
                "question",
                "group",
                "score",
                "models",
                "samples",
                "mean",
                "95% CI",
                "refusal rate",
                "errors",
            ]
        )
    )
    body = []
    for row in summary.to_dict(orient="records"):
        low, high = row["ci_low"], row["ci_high"]
        ci = "" if math.isnan(low) else f"{_number(low)} – {_number(high)}"
        rate = row["refusal_rate"]
        refusal = "" if math.isnan(rate) else f"{rate:.1%}"
        body.append(
            f"<tr><td>{escape(str(row['question']))}</td><td>{escape(str(row['group']))}</td>"
            f"<td>{escape('rating' if row['score'] == 'answer' else str(row['score']))}</td>"
            f"<td class='num'>{_number(int(row['n_models']))}</td>"
            f"<td class='num'>{_number(int(row['n_samples']))}</td>"
            f"<td class='num'>{_number(row['mean'])}</td><td class='num'>{ci}</td>"
            f"<td class='num'>{refusal}</td><td class='num'>{_number(int(row['n_errors']))}</td>"
            "</tr>"
        )
    return (
        f"<div class='scroll'><table id='summary-table'><thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


def _figure(figure: EmbeddedFigure) -> str:
    return (
        f"<figure><img alt='{escape(figure.caption)}' src='{figure.data_uri}'>"
        f"<figcaption>{escape(figure.caption)}</figcaption></figure>"
    )


def _question_section(
    run: Run, name: str, index: int, drawn: tuple[list[EmbeddedFigure], list[str]]
) -> str:
    info = run.question_info(name)
    prompts = info.get("prompts", [])
    totals = info.get("totals", {})
    figures, problems = drawn
    shown = "".join(f"<div class='prompt'>{escape(str(p))}</div>" for p in prompts[:3])
    more = f"<p class='muted'>and {len(prompts) - 3} more prompts</p>" if len(prompts) > 3 else ""
    notes = "".join(f"<p class='muted'>{escape(p)}</p>" for p in problems)
    facts = _facts(
        [
            ("type", str(info.get("type", ""))),
            ("scores", ", ".join(info.get("scores", [])) or "none"),
            (
                "judges",
                ", ".join(f"{k} ({v})" for k, v in info.get("judges", {}).items()) or "none",
            ),
            ("samples", f"{totals.get('rows', 0):,} ({totals.get('errors', 0):,} with errors)"),
            ("cost", f"${totals.get('cost', 0):,.4f}"),
        ]
    )
    return (
        f"<section class='question' id='question-{index}'><h3>{escape(name)}</h3>{facts}"
        f"{shown}{more}{''.join(_figure(f) for f in figures)}{notes}</section>"
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
    run: Run, *, title: str | None = None, figures: bool = True, figure_store: Path | None = None
) -> str:
    """The report of `run` as one self-contained HTML document (`figures=False` leaves the
    figures out, which is faster). Figures are drawn in parallel processes; with
    `figure_store` (a folder) they are kept there and reused while their input is unchanged."""
    script = _static("report.js")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    csp = (
        "default-src 'none'; img-src data:; style-src 'unsafe-inline'; "
        f"script-src 'sha256-{digest}'; base-uri 'none'; form-action 'none'"
    )
    headline = headline_figure(run) if figures else None
    curves = curves_figure(run) if figures else None
    drawn = draw_figures(run, figure_store) if figures else {}
    body = [
        "<section id='summary'><h2>Run</h2>",
        _run_facts(run),
        "<h3>Groups</h3>",
        _groups_table(run),
        "<h3>Summary</h3>",
        _summary_table(run.summary),
        _figure(headline) if headline else "",
        "<h3>Training curves</h3>" + _figure(curves) if curves else "",
        "</section><section id='questions'><h2>Questions</h2>",
        *(
            _question_section(run, name, i, drawn.get(name, ([], [])))
            for i, name in enumerate(run.questions)
        ),
        "</section>",
    ]
    page = Template(_static("page.html"))
    return page.substitute(
        csp=csp,
        title=escape(title or report_title(run)),
        css=_static("report.css"),
        body="\n".join(body),
        data=safe_json(build_payload(run)),
        script=script,
    )
