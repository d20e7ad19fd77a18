"""A run's human labels as the gold set: the labelled answers of one score (`human_<score>`
in `human_labels.csv`, written by `labels import`), each to be rated by a judge asked like the
run's own rating judge of that score (its prompt and range) when it has one."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from evals.errors import JudgeItemsError, QuestionError
from evals.judge_accuracy._items import SCORE_RANGE, JudgeItem, JudgeItems
from evals.questions import Question, RatingJudge
from evals.runs import HUMAN_PREFIX, LABELS_FILE, Run, load_run


def items_from_run(run_dir: str | Path, score: str | None = None) -> JudgeItems:
    """The answers of `run_dir` that people labelled for `score` (None: the run's only
    labelled score), with their labels as gold scores."""
    run = load_run(run_dir)
    labels = run.human_labels()
    scores = (
        []
        if labels is None
        else [c[len(HUMAN_PREFIX) :] for c in labels.columns if c.startswith(HUMAN_PREFIX)]
    )
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
    answers = frame[[*keys, "question", "answer"]].drop_duplicates(keys).copy()
    answers["model"] = answers["model"].astype(str)
    wanted = labels[["id", *keys, column]].copy()
    wanted["model"] = wanted["model"].astype(str)
    wanted[["paraphrase_ix", "sample_ix"]] = wanted[["paraphrase_ix", "sample_ix"]].astype(int)
    merged = wanted.merge(answers, on=keys, how="inner")
    return [
        JudgeItem(str(row["id"]), str(row["question"]), float(row[column]), answer=row["answer"])
        for row in merged.to_dict(orient="records")
        if isinstance(row["answer"], str)
    ]
