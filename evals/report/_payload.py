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


def _sent_indices(frame: pd.DataFrame, sent: dict[str, int]) -> list[int | None]:
    """Each row's request parameters as an index into `sent` (None: not recorded, as in runs
    written before the `api_kwargs` column)."""
    if "api_kwargs" not in frame.columns:
        return [None] * len(frame)
    return [
        sent.setdefault(value, len(sent)) if isinstance(value, str) and value else None
        for value in frame["api_kwargs"].tolist()
    ]


def build_payload(run: Run) -> dict[str, Any]:
    """`{questions, groups, models, sent, scores, texts, rows}` for the page's script
    (`sent`: the distinct request parameters the rows' `k` point to)."""
    groups = list(run.groups)
    models: dict[str, int] = {}
    group_index = {g: i for i, g in enumerate(groups)}
    score_names: dict[str, None] = {}
    text_names: dict[str, None] = {}
    frames = run.frames()
    for name in run.questions:
        score_names.update(dict.fromkeys(run.scores(name)))
        judges = run.question_info(name).get("judges", {})
        text_names.update(
            dict.fromkeys(j for j, kind in judges.items() if kind == "free_form_judge")
        )
    sent: dict[str, int] = {}  # distinct request parameters (api_kwargs), by first use
    keys = ("q", "g", "m", "p", "s", "k", "answer", "error")
    columns: dict[str, list[Any]] = {key: [] for key in keys}
    scores: dict[str, list[float | None]] = {name: [] for name in score_names}
    texts: dict[str, list[str | None]] = {name: [] for name in text_names}
    questions = []
    for qi, name in enumerate(run.questions):
        frame = frames[name]
        info = run.question_info(name)
        questions.append(
            {
                "name": name,
                "type": info.get("type"),
                "prompts": [str(p) for p in info.get("prompts", [])],
            }
        )
        n = len(frame)
        for group in frame["group"].astype(str).unique():
            if group not in group_index:
                group_index[group] = len(groups)
                groups.append(group)
        columns["q"].extend([qi] * n)
        columns["g"].extend(group_index[g] for g in frame["group"].astype(str))
        columns["m"].extend(models.setdefault(m, len(models)) for m in frame["model"].astype(str))
        columns["p"].extend(frame["paraphrase_ix"].astype(int).tolist())
        columns["s"].extend(frame["sample_ix"].astype(int).tolist())
        columns["k"].extend(_sent_indices(frame, sent))
        columns["answer"].extend(answer_text(v) for v in frame["answer"].tolist())
        columns["error"].extend(_texts(frame["error"]))
        for score in score_names:
            scores[score].extend(_numbers(frame[score]) if score in frame.columns else [None] * n)
        for text in text_names:
            texts[text].extend(_texts(frame[text]) if text in frame.columns else [None] * n)
    if "answer" in scores:  # a rating's score: named apart from the answer text column
        scores["rating"] = scores.pop("answer")
    return {
        "questions": questions,
        "groups": groups,
        "models": list(models),
        "sent": list(sent),
        "scores": list(scores),
        "texts": list(text_names),
        "rows": {**columns, "scores": scores, "texts": texts},
    }
