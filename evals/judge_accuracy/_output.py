"""The output folder of a judge check: `judges.json`, `verdicts.csv`, `wrong.csv` and
`report.html` (every text escaped; cells a spreadsheet would run are neutralised)."""

from __future__ import annotations

import json
import math
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.errors import OutputError, why_not_writable
from evals.labels import neutralise

if TYPE_CHECKING:
    from evals.judge_accuracy._items import JudgeItems
    from evals.judge_accuracy._running import JudgeAccuracy

JUDGES_FILE = "judges.json"
VERDICTS_FILE = "verdicts.csv"
WRONG_FILE = "wrong.csv"
REPORT_FILE = "report.html"
_SHOWN_WRONG = 50  # wrong items the report lists per judge (wrong.csv has them all)


def wrong_items(verdicts: pd.DataFrame, items: JudgeItems) -> pd.DataFrame:
    """Per judge, each item with a wrong verdict: its texts, the gold answer, what the judge
    picked (in order) and how many verdicts were wrong."""
    texts = ["answer_a", "answer_b"] if items.kind == "pair" else ["answer"]
    columns = ["judge", "item", "question", *texts, "gold", "picked", "wrong", "verdicts"]
    by_id = {item.id: item for item in items.items}
    read = verdicts[verdicts["correct"].notna()]
    rows = []
    for (judge, item_id), mine in read.groupby(["judge", "item"], sort=False):
        misses = int((mine["correct"] == 0).sum())
        if not misses:
            continue
        item = by_id[str(item_id)]
        answers = [getattr(item, name) for name in texts]
        picked = "; ".join(_shown(value) for value in mine["picked"])
        rows.append([judge, item_id, item.question, *answers, item.gold, picked, misses, len(mine)])
    return pd.DataFrame(rows, columns=columns)


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _csv(frame: pd.DataFrame, path: Path) -> None:
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object:
            safe[column] = safe[column].map(lambda v: neutralise(v) if isinstance(v, str) else v)
    safe.to_csv(path, index=False)


def write_output(result: JudgeAccuracy) -> None:
    folder = result.path
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / JUDGES_FILE).write_text(
            json.dumps(result.as_json(), indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        _csv(result.verdicts, folder / VERDICTS_FILE)
        _csv(result.wrong, folder / WRONG_FILE)
        (folder / REPORT_FILE).write_text(report_page(result), encoding="utf-8")
    except OSError as error:
        raise OutputError(
            f"cannot write the judge check into {folder}: {why_not_writable(folder, error)}",
            hint="Give a folder you can write to with --out.",
        ) from None


def _share(value: dict[str, Any] | None) -> str:
    if not value or value.get("value") is None:
        return ""
    return f"{value['value']:.2f} ({value['low']:.2f} – {value['high']:.2f})"


def _number(value: Any, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return f"{value:.{digits}f}" if isinstance(value, float) else escape(str(value))


def _table(head: list[str], rows: list[list[str]]) -> str:
    header = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def report_page(result: JudgeAccuracy) -> str:
    kind = result.items.kind
    head = ["judge", "accuracy (95% CI)", "items", "verdicts unread", "cost"]
    if kind == "pair":
        head[3:3] = ["same position both orders", "first / second"]
    if kind == "score":
        head[3:3] = ["mean abs. error", "Spearman ρ"]
    rows = []
    for judge in result.judges:
        row = [escape(judge["judge"]), _share(judge["accuracy"]), str(judge["items"])]
        if kind == "pair":
            bias = judge["position_bias"]
            both = f"{_number(bias['first_both_times'])} / {_number(bias['second_both_times'])}"
            row += [_share({**bias, "value": bias["rate"]}), both]
        if kind == "score":
            row += [_number(judge["mae"], 1), _number(judge["spearman"])]
        rows.append([*row, str(judge["unread"]), f"${judge['cost']:.4f}"])
    parts = [
        f"<h1>Judge accuracy: {escape(result.items.name)}</h1>",
        f"<p>{escape(describe(result))}</p>",
        _table(head, rows),
    ]
    if result.agreement:
        agreed = []
        for a in result.agreement:
            numbers = [_number(a["agreement"]), _number(a["kappa"])]
            agreed.append([escape(a["judge"]), escape(a["other"]), str(a["n"]), *numbers])
        parts.append("<h2>Agreement between judges</h2>")
        parts.append(_table(["judge", "other", "verdicts", "agree", "Cohen's κ"], agreed))
    texts = [c for c in result.wrong.columns if c not in ("judge", "item")]
    for judge in result.judges:
        mine = result.wrong[result.wrong["judge"] == judge["judge"]]
        parts.append(f"<h2>Wrong: {escape(judge['judge'])} ({len(mine)} items)</h2>")
        if mine.empty:
            continue
        shown = [
            [escape(str(r["item"])), *(f"<pre>{escape(_shown(r[c]))}</pre>" for c in texts)]
            for r in mine.head(_SHOWN_WRONG).to_dict(orient="records")
        ]
        parts.append(_table(["item", *texts], shown))
    return _PAGE.format(title=escape(result.items.name), body="\n".join(parts))


def describe(result: JudgeAccuracy) -> str:
    items = result.items
    if items.kind == "pair":
        what = (
            "pairs, each asked in both orders; a verdict is right when it picks the better answer"
        )
    elif items.kind == "label":
        what = "answers with a gold label; a verdict is right when it gives that label"
    else:
        what = "answers with a gold score; a verdict is right when the rating and the gold "
        what += f"score fall on the same side of {result.threshold or 0:g}"
    return (
        f"{len(items.items)} {what} (from {items.source}). Accuracy is the mean over items of "
        "each item's share of right verdicts, with a 95% Wilson interval over items."
    )


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Judge accuracy: {title}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; max-width: 70rem; }}
table {{ border-collapse: collapse; margin: 1rem 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.3rem 0.6rem; text-align: left;
  vertical-align: top; }}
pre {{ white-space: pre-wrap; margin: 0; max-width: 30rem; font-family: inherit; }}
</style></head>
<body>
{body}
</body></html>
"""
