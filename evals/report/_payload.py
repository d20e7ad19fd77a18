"""The sample browser's data: every sample of a run as compact columns, as JSON that is safe
inside a `<script type="application/json">` element (`<`, `>`, `&` escaped)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from evals.runs import Run

_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_TOP_TOKENS = 8


def safe_json(value: Any) -> str:
    """JSON text with no character that HTML parsing could act on."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for raw, escaped in _ESCAPES.items():
        text = text.replace(raw, escaped)
    return text


def answer_text(value: Any) -> str | None:
    """How an answer reads in the browser: text as is, numbers rounded, distributions as their
    most likely tokens."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        items = sorted(value.items(), key=lambda kv: -float(kv[1]))[:_TOP_TOKENS]
        return ", ".join(
            f"{json.dumps(str(k), ensure_ascii=False)}: {float(v):.3f}" for k, v in items
        )
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _numbers(series: pd.Series) -> list[float | None]:
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float, na_value=math.nan)
    return [None if v != v else v for v in np.round(values, 4).tolist()]  # NaN → None


def _texts(series: pd.Series) -> list[str | None]:
    return [v if isinstance(v, str) and v else None for v in series.tolist()]


def build_payload(run: Run) -> dict[str, Any]:
    """`{questions, groups, models, sent, scores, texts, rows}` for the page's script
    (`sent`: the distinct request parameters (`api_kwargs`) the rows' `k` point to, by first
    use; None where a row has none recorded, as in runs written before that column)."""
    infos = [run.question_info(name) for name in run.questions]
    score_names = list(dict.fromkeys(s for name in run.questions for s in run.scores(name)))
    judges = [pair for info in infos for pair in info.get("judges", {}).items()]
    text_names = list(dict.fromkeys(judge for judge, kind in judges if kind == "free_form_judge"))
    frames = run.frames()
    rows = pd.concat(
        [frames[name].assign(_q=qi) for qi, name in enumerate(run.questions)], ignore_index=True
    )
    wanted = ["_q", "group", "model", "paraphrase_ix", "sample_ix", "answer", "error", "api_kwargs"]
    rows = rows.reindex(columns=list(dict.fromkeys([*wanted, *score_names, *text_names])))
    groups = list(dict.fromkeys([*run.groups, *rows["group"].astype(str)]))
    model_codes, models = pd.factorize(rows["model"].astype(str), sort=False)
    sent = rows["api_kwargs"].where(
        rows["api_kwargs"].map(lambda v: isinstance(v, str) and v != "")
    )
    sent_codes, sent_values = pd.factorize(sent, sort=False)
    scores = {name: _numbers(rows[name]) for name in score_names}
    if "answer" in scores:  # a rating's score: named apart from the answer text column
        scores["rating"] = scores.pop("answer")
    columns = {
        "q": rows["_q"].tolist(),
        "g": rows["group"].astype(str).map({g: i for i, g in enumerate(groups)}).tolist(),
        "m": model_codes.tolist(),
        "p": rows["paraphrase_ix"].astype(int).tolist(),
        "s": rows["sample_ix"].astype(int).tolist(),
        "k": [None if code < 0 else code for code in sent_codes.tolist()],
        "answer": [answer_text(v) for v in rows["answer"].tolist()],
        "error": _texts(rows["error"]),
    }
    return {
        "questions": [
            {
                "name": name,
                "type": info.get("type"),
                "prompts": [str(p) for p in info.get("prompts", [])],
            }
            for name, info in zip(run.questions, infos, strict=True)
        ],
        "groups": groups,
        "models": list(models),
        "sent": list(sent_values),
        "scores": list(scores),
        "texts": text_names,
        "rows": {
            **columns,
            "scores": scores,
            "texts": {name: _texts(rows[name]) for name in text_names},
        },
    }
