"""`score_run`: judge a finished run's answers later (skipped judges, another judge model, new
judges) and check right answers again; only judge requests are made."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.errors import QuestionError, RunFolderError, RunOptionsError
from evals.questions import FreeForm, Question, load_questions
from evals.runner import run_context
from evals.runs import REPORT_FILE, Run, load_run, rewrite_questions, utc_now

if TYPE_CHECKING:
    from evals.runner import Judge

_JUDGE_TYPES = ("rating_judge", "free_form_judge")


@dataclass
class ScoredRun:
    """What `score_run` did."""

    run: Run
    """The run as read after scoring (its samples, summary, comparisons)."""
    judged: dict[str, list[str]] = field(default_factory=dict)
    """The judges asked, per question."""
    bought: dict[str, float] = field(default_factory=dict)
    """Tokens and dollars of the verdicts bought now (cached verdicts cost nothing)."""
    report: Path | None = None


def _judges_from(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """Judges by column name: a question file's judge entries, or `{name: judge or options}`."""
    if isinstance(source, Mapping):
        return dict(source)
    questions = load_questions(source)
    judges = {name: q for name, q in questions.items() if q.type_name in _JUDGE_TYPES}
    if not judges:
        raise RunOptionsError(
            f"{source}: no judge in this file (entries of type rating_judge or free_form_judge)",
            hint="Write each judge as an entry with name, type: rating_judge, model and one "
            "paraphrase containing {answer}.",
        )
    return judges


def _question_of(run: Run, name: str) -> Question | None:
    """The question as the run recorded it (None for a run written from frames alone)."""
    info = run.question_info(name)
    definition = info.get("definition")
    if not isinstance(definition, Mapping):
        return None
    try:
        return Question.create(type=str(info.get("type")), **dict(definition))
    except QuestionError as error:
        raise RunFolderError(
            f"{run.path}: question {name!r} is recorded in a form that cannot be read again "
            f"({error.message})"
        ) from None


def _without(frame: pd.DataFrame, judges: Mapping[str, Judge]) -> pd.DataFrame:
    """`frame` without the columns of `judges` and the errors they left, ready to judge."""
    dropped = [
        column
        for name, judge in judges.items()
        for column in (
            name,
            f"{name}_question",
            f"{name}_api_kwargs",
            f"{name}_cost",
            *(f"{name}_{extra}" for extra in judge.extra_columns),
        )
        if column in frame.columns
    ]
    cleaned = frame.drop(columns=dropped)
    prefixes = tuple(f"judge {name}: " for name in judges)
    errors = cleaned["error"].astype(object)
    stale = errors.map(lambda e: isinstance(e, str) and e.startswith(prefixes))
    cleaned["error"] = errors.where(~stale, None)
    return cleaned


def score_run(
    run: Run | str | Path,
    *,
    judges: str | Path | Mapping[str, Any] | None = None,
    judge_model: str | None = None,
    report: bool | None = None,
    **options: Any,
) -> ScoredRun:
    """Judge the answers of `run` again and rewrite its folder.

    Without `judges`, each question's own judges (as the run recorded them) are asked.
    `judges` (a question file's judge entries, or `{name: judge}`) are added to every
    free-form question, replacing those of the same name; `judge_model` asks every judge of
    that model. Questions with a target have their answers checked again (`correct`,
    nothing bought). `report` rewrites report.html (default: when the run has one). `options` are
    `Question.ask`'s (`lab=`, `cache=`, `router=`, …)."""
    loaded = run if isinstance(run, Run) else load_run(run)
    extra = _judges_from(judges) if judges is not None else {}
    chosen: dict[str, Question] = {}
    for name in loaded.questions:
        question = _question_of(loaded, name)
        if question is None:
            if not extra:
                continue
            raise RunFolderError(
                f"{loaded.path}: question {name!r} was written without its definition, so "
                "its answers cannot be judged again",
                hint="Score runs written by `labmgr eval run` or `run_questions`.",
            )
        if question.has_target():  # answers with a right answer are checked again
            chosen[name] = question
        if not isinstance(question, FreeForm):  # only free text is judged
            continue
        chosen[name] = question.with_judges(extra, model=judge_model)
    asking: dict[str, dict[str, Judge]] = {}
    for name, question in chosen.items():
        judges_of = question.judge_questions()
        mine = {judge: judges_of[judge] for judge in judges_of if not extra or judge in extra}
        if mine:
            asking[name] = mine
    if not asking and not any(q.has_target() for q in chosen.values()):
        raise RunOptionsError(
            f"{loaded.path}: no question of the run has judges to ask",
            hint="Give judges with --judges FILE (free-form questions only: ratings and "
            "next-token questions have no text to judge).",
        )
    from evals.answers import judge_frames

    ctx = run_context(**options)
    answers = {
        name: _without(loaded.samples(name), judges_of) for name, judges_of in asking.items()
    }
    frames, outcome = judge_frames(answers, asking, ctx)
    for name, question in chosen.items():
        if question.has_target():
            frames[name] = question.mark_answers(frames.get(name, loaded.samples(name)))
    bought = {
        key: float(getattr(outcome, key)) for key in ("prompt_tokens", "completion_tokens", "cost")
    }
    if outcome.stopped:
        raise RunOptionsError(
            f"scoring {loaded.path} stopped: {outcome.stopped}; nothing was rewritten",
            hint="The verdicts bought so far are cached: run the same command again.",
        )
    settings = dict(loaded.info.get("settings") or {})
    if asking:
        settings["judges"] = "asked"
    # How these verdicts were bought, when not as the run's answers were: their costs are
    # shared at that price (a batch run judged again without batches pays the list price).
    judge_batch = dict(settings.get("judge_batch") or {})
    judge_batch.update({judge: bool(ctx.settings.batch) for js in asking.values() for judge in js})
    if any(batch != bool(settings.get("batch")) for batch in judge_batch.values()):
        settings["judge_batch"] = judge_batch
    else:
        settings.pop("judge_batch", None)
    if judge_model is not None:
        settings["judge_model"] = judge_model
    judged = {name: list(judges_of) for name, judges_of in asking.items()}
    passes = [
        *(loaded.info.get("scored") or []),
        {"at": utc_now(), "judges": judged, "judge_model": judge_model, "bought": bought},
    ]
    recorded = {"settings": settings, "scored": passes}
    rewritten = rewrite_questions(loaded, frames, {name: chosen[name] for name in frames}, recorded)
    path = None
    if report if report is not None else (loaded.path / REPORT_FILE).is_file():
        from evals.report import write_report

        path = write_report(rewritten, rewritten.path / REPORT_FILE)
    return ScoredRun(rewritten, judged, bought, path)
