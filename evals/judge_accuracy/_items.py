"""Labelled items a judge is checked on: from a JSON lines or CSV file (pairs with `better:
a|b`, answers with a gold `score` 0–100 or `label`; every bad row named before anything is
asked), or a run's human labels of one score."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from evals.errors import JudgeItemsError, QuestionError
from evals.questions import Question, RatingJudge, read_rows
from evals.runs import HUMAN_PREFIX, LABELS_FILE, Run, load_run

Kind = Literal["pair", "score", "label"]

FIELDS = ("id", "question", "answer_a", "answer_b", "better", "answer", "score", "label", "labels")
SCORE_RANGE = (0.0, 100.0)
"""Gold scores of a file, and the rating judge's range, run from 0 to 100."""


@dataclass(frozen=True)
class JudgeItem:
    """One labelled item: a pair with the better answer (`gold` is ``a`` or ``b``), or one
    answer with its gold score (a number) or label (`options` are the labels offered)."""

    id: str
    question: str
    gold: str | float
    answer: str = ""
    answer_a: str = ""
    answer_b: str = ""
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeItems:
    """The items of one file (or one run's human labels), all of one kind."""

    name: str
    """Names the items in the cache and the output folder (the file's stem)."""
    kind: Kind
    items: list[JudgeItem]
    source: str
    scale: tuple[float, float] = SCORE_RANGE
    """Score items: the range of the gold scores and of the rating judge."""
    template: str | None = None
    """Score items: the rating judge's prompt (`{question}`, `{answer}`); None: the default."""
    labels: tuple[str, ...] = field(default=())
    """Label items: every label of the file, in order of first appearance."""

    @property
    def label(self) -> str:
        """Names the verdicts in the cache (`labmgr cache clear --question`)."""
        return f"judges/{self.name}"


def read_items(path: str | Path) -> JudgeItems:
    """The labelled items of a `.jsonl` or `.csv` file; `JudgeItemsError` names the first bad
    row (file, line, field) and says what to write instead."""
    source = Path(path)
    if not source.is_file():
        raise JudgeItemsError(f"{source}: no such file", hint="Give a .jsonl or .csv file.")
    suffix = source.suffix.lower()
    if suffix not in (".jsonl", ".csv"):
        raise JudgeItemsError(
            f"{source}: not a .jsonl or .csv file", hint="Write the items as JSON lines or CSV."
        )
    try:
        _, read = read_rows(source)
    except (OSError, UnicodeDecodeError) as error:
        raise JudgeItemsError(f"{source}: cannot read: {error}") from None
    except ValueError as error:
        raise JudgeItemsError(str(error)) from None
    items: list[JudgeItem] = []
    first: tuple[Kind, int] | None = None  # the kind of the first item, and its line
    ids: dict[str, int] = {}
    empty = (None, "") if suffix == ".csv" else (None,)  # an empty CSV cell is no value
    for line, cells in read:
        row = {k: v for k, v in cells.items() if v not in empty}
        if not row and suffix == ".csv":  # a line of empty cells
            continue
        where = f"{source}:{line}"
        kind, item = _item(where, line, row)
        first = first or (kind, line)
        if first[0] != kind:
            raise JudgeItemsError(
                f"{where}: a {_KIND_WORDS[kind]}, but line {first[1]} is a "
                f"{_KIND_WORDS[first[0]]}: a file holds one kind of item",
                hint="Put pairs, scored answers and labelled answers in separate files.",
            )
        if item.id in ids:
            raise JudgeItemsError(
                f"{where}: field 'id': {item.id!r} is also the id of line {ids[item.id]}",
                hint="Give every item its own id (or leave 'id' out: the line number is used).",
            )
        ids[item.id] = line
        items.append(item)
    if first is None:
        raise JudgeItemsError(f"{source}: no items in this file")
    kind, labels = first[0], tuple(dict.fromkeys(str(item.gold) for item in items))
    if kind != "label":
        return JudgeItems(source.stem, kind, items, str(source))
    items = _with_options(source, items, labels, ids)
    return JudgeItems(source.stem, kind, items, str(source), labels=labels)


_KIND_WORDS: dict[Kind, str] = {
    "pair": "pair (answer_a, answer_b, better)",
    "score": "single answer with a gold score",
    "label": "single answer with a gold label",
}


def _text(where: str, row: Mapping[str, Any], name: str) -> str:
    value = row.get(name)
    if value is None:
        raise JudgeItemsError(f"{where}: missing field '{name}'", hint=_SHAPES)
    if not isinstance(value, str):
        raise JudgeItemsError(f"{where}: field '{name}' must be text, not {value!r}")
    return value


_SHAPES = (
    "Each line is a pair {question, answer_a, answer_b, better: a|b} or a single answer "
    "{question, answer, score} (score 0-100) or {question, answer, label}."
)


def _item(where: str, line: int, row: Mapping[str, Any]) -> tuple[Kind, JudgeItem]:
    unknown = [name for name in row if name not in FIELDS]
    if unknown:
        raise JudgeItemsError(
            f"{where}: unknown field '{unknown[0]}'",
            hint=f"The fields are {', '.join(FIELDS)}.",
        )
    raw_id = row.get("id", line)
    if isinstance(raw_id, bool) or not isinstance(raw_id, str | int):
        raise JudgeItemsError(f"{where}: field 'id' must be text or a whole number")
    item_id = str(raw_id)
    question = _text(where, row, "question")
    if any(name in row for name in ("answer_a", "answer_b", "better")):
        if "answer" in row or "score" in row or "label" in row:
            raise JudgeItemsError(
                f"{where}: a pair (answer_a, answer_b, better) that also has a single answer's "
                "fields (answer, score or label)",
                hint=_SHAPES,
            )
        better = _text(where, row, "better").strip().lower()
        if better not in ("a", "b"):
            raise JudgeItemsError(
                f"{where}: field 'better' is {row['better']!r}",
                hint="Write a (answer_a is better) or b (answer_b is better).",
            )
        first, second = _text(where, row, "answer_a"), _text(where, row, "answer_b")
        return "pair", JudgeItem(item_id, question, better, answer_a=first, answer_b=second)
    answer = _text(where, row, "answer")
    if ("score" in row) == ("label" in row):
        raise JudgeItemsError(
            f"{where}: a single answer needs exactly one of the fields 'score' and 'label'",
            hint=_SHAPES,
        )
    if "score" in row:
        return "score", JudgeItem(item_id, question, _score(where, row["score"]), answer=answer)
    label = _text(where, row, "label").strip()
    if not label or "," in label:
        raise JudgeItemsError(
            f"{where}: field 'label' is {row['label']!r}",
            hint="Write one label, without commas (for example: correct).",
        )
    options = _options(where, row["labels"]) if "labels" in row else ()
    if options and label not in options:
        raise JudgeItemsError(
            f"{where}: field 'label' is {label!r}, not one of its labels ({', '.join(options)})"
        )
    return "label", JudgeItem(item_id, question, label, answer=answer, options=options)


def _score(where: str, value: Any) -> float:
    try:
        number = float(value) if not isinstance(value, bool) else math.nan
    except (TypeError, ValueError):
        number = math.nan
    low, high = SCORE_RANGE
    if not low <= number <= high:
        raise JudgeItemsError(
            f"{where}: field 'score' is {value!r}",
            hint=f"Write a number from {low:g} to {high:g}.",
        )
    return number


def _options(where: str, value: Any) -> tuple[str, ...]:
    names = value.split(",") if isinstance(value, str) else value
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise JudgeItemsError(
            f"{where}: field 'labels' must be a list of labels or comma-separated text"
        )
    options = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    if len(options) < 2:
        raise JudgeItemsError(f"{where}: field 'labels' needs at least two labels")
    return options


def _with_options(
    source: Path, items: list[JudgeItem], labels: tuple[str, ...], lines: dict[str, int]
) -> list[JudgeItem]:
    """Label items offering the file's labels where a row names none of its own."""
    if len(labels) < 2 and any(not item.options for item in items):
        first = next(item for item in items if not item.options)
        raise JudgeItemsError(
            f"{source}:{lines[first.id]}: field 'labels' is missing and the file's only label "
            f"is {labels[0]!r}: a judge must be offered at least two",
            hint="Add a 'labels' field (for example: correct,incorrect) to such rows.",
        )
    return [item if item.options else replace(item, options=labels) for item in items]


def items_from_run(run_dir: str | Path, score: str | None = None) -> JudgeItems:
    """The answers of `run_dir` that people labelled for `score` (None: the run's only
    labelled score), with their labels as gold scores."""
    run = load_run(run_dir)
    labels = run.human_labels()
    columns = [] if labels is None else list(labels.columns)
    scores = [c.removeprefix(HUMAN_PREFIX) for c in columns if c.startswith(HUMAN_PREFIX)]
    if labels is None or not scores:
        raise JudgeItemsError(
            f"{run.path}: no human labels ({LABELS_FILE})",
            hint="Label answers with `labmgr labels export` and `labmgr labels import` first.",
        )
    if score is None:
        if len(scores) > 1:
            raise JudgeItemsError(
                f"{run.path}: labels of several scores ({', '.join(scores)})",
                hint="Name the one to check with --score.",
            )
        score = scores[0]
    elif score not in scores:
        raise JudgeItemsError(
            f"{run.path}: no human labels of score {score!r}",
            hint=f"Labelled scores: {', '.join(scores)}.",
        )
    column = f"{HUMAN_PREFIX}{score}"
    items: list[JudgeItem] = []
    template, scale = None, SCORE_RANGE
    for question in run.questions:
        mine = labels[(labels["question"].astype(str) == question) & labels[column].notna()]
        if mine.empty:
            continue
        judge = _rating_judge(run, question, score)
        if judge is not None and template is None:
            template = judge.prompt_template
            scale = (float(judge.min_rating), float(judge.max_rating))
        items.extend(_labelled(run, question, mine, column))
    if not items:
        raise JudgeItemsError(f"{run.path}: no labelled answer of score {score!r} in its samples")
    return JudgeItems(
        f"{run.path.name}-{score}",
        "score",
        items,
        f"{run.path / LABELS_FILE} ({score})",
        scale=scale,
        template=template,
    )


def _rating_judge(run: Run, question: str, score: str) -> RatingJudge | None:
    """The run's rating judge `score` of `question`, as the run recorded it (None if none)."""
    info = run.question_info(question)
    definition = info.get("definition")
    if not isinstance(definition, Mapping):
        return None
    try:
        recorded = Question.create(type=str(info.get("type")), **dict(definition))
    except QuestionError:
        return None
    judge = dict(recorded.judge_questions()).get(score)
    return judge if isinstance(judge, RatingJudge) else None


def _labelled(run: Run, question: str, labels: pd.DataFrame, column: str) -> list[JudgeItem]:
    """Each labelled sample of `question` as an item: its prompt, answer and label."""
    keys = ["model", "paraphrase_ix", "sample_ix"]
    frame = run.samples(question)
    answers = frame[[*keys, "question", "answer"]].drop_duplicates(keys).astype({"model": str})
    types = {"model": str, "paraphrase_ix": int, "sample_ix": int}
    merged = labels[["id", *keys, column]].astype(types).merge(answers, on=keys, how="inner")
    return [
        JudgeItem(str(row["id"]), str(row["question"]), float(row[column]), answer=row["answer"])
        for row in merged.to_dict(orient="records")
        if isinstance(row["answer"], str)
    ]
