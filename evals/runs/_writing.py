"""`write_run`: frames (one per question, as `q.df` returns them) to a run folder: samples,
statistics, and `run.json` with versions and endpoints, never keys."""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from evals.errors import (
    NoEndpointError,
    OutputError,
    RunFolderError,
    describe_os_error,
    why_not_writable,
)
from evals.runs._analysis import (
    ScorePlan,
    analyze_run,
    check_baseline,
    check_by,
    check_method,
    score_plan,
    write_run_file,
    write_statistics,
    write_table,
)
from evals.runs._folder import (
    CURVES_FILE,
    MODEL_SUMMARY_FILE,
    RUN_FILE,
    Run,
    load_run,
    samples_file_name,
)
from evals.runs._samples_file import write_samples
from evals.stats import (
    DEFAULT_METHOD,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Baseline,
    Method,
    Metric,
    model_summary,
)

if TYPE_CHECKING:
    from evals.questions import Question

_PACKAGES = ("openai", "pandas", "numpy", "scipy", "pyarrow", "seaborn", "matplotlib", "pydantic")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def package_versions() -> dict[str, str]:
    """Versions of labmgr, Python and the libraries that shape the results."""
    from labmgr import __version__

    versions = {"labmgr": __version__, "python": platform.python_version()}
    for name in _PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def endpoints_of(models: list[str], router: Any) -> dict[str, dict[str, str | None]]:
    """Each model's base URL and the *name* of the key's environment variable (or an error)."""
    result: dict[str, dict[str, str | None]] = {}
    for model in models:
        try:
            endpoint = router.endpoint_for(model)
        except NoEndpointError as error:
            result[model] = {"base_url": None, "key_name": None, "error": error.message}
            continue
        result[model] = {
            "base_url": endpoint.base_url,
            "key_name": endpoint.key_name,
            "organization": endpoint.organization,
            "project": endpoint.project,
        }
    return result


def frame_totals(frame: pd.DataFrame) -> dict[str, float]:
    """Rows, rows with errors, tokens, and the samples' cost at list price (`list_cost`,
    whatever this run paid) of one frame."""

    def total(column: str) -> float:
        if column not in frame.columns:
            return 0.0
        return float(pd.to_numeric(frame[column], errors="coerce").sum())

    return {
        "rows": len(frame),
        "errors": int(frame["error"].notna().sum()) if "error" in frame.columns else 0,
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "list_cost": total("cost"),
    }


def _guess_type(frame: pd.DataFrame) -> str:
    answers = frame["answer"].dropna()
    if len(answers) and isinstance(answers.iloc[0], dict):
        return "next_token"
    if pd.api.types.is_numeric_dtype(frame["answer"]):
        return "rating"
    return "free_form"


def _judges(frame: pd.DataFrame) -> dict[str, str]:
    columns = [str(c) for c in frame.columns]
    asked = [c.removesuffix("_question") for c in columns if c.endswith("_question")]
    return {
        judge: "rating_judge" if f"{judge}_probs" in columns else "free_form_judge"
        for judge in asked
        if judge in columns
    }


def _prompts(frame: pd.DataFrame) -> list[str]:
    pairs = frame[["paraphrase_ix", "question"]].drop_duplicates("paraphrase_ix")
    by_index = dict(zip(pairs["paraphrase_ix"].astype(int), pairs["question"], strict=True))
    return [str(by_index.get(i, "")) for i in range(max(by_index, default=-1) + 1)]


def _frame_factors(frame: pd.DataFrame) -> dict[str, list[str]]:
    """A frame's grid factors: the columns `build_frame` puts between `paraphrase_ix` and
    `sample_ix`, with their levels in order of appearance."""
    columns = [str(c) for c in frame.columns]
    if "paraphrase_ix" not in columns or "sample_ix" not in columns:
        return {}
    between = columns[columns.index("paraphrase_ix") + 1 : columns.index("sample_ix")]
    return {f: list(dict.fromkeys(frame[f].astype(str))) for f in between}


def _question_entry(
    name: str, frame: pd.DataFrame, question: Question | None, plan: ScorePlan
) -> dict[str, Any]:
    """run.json's entry of a question: from the question, else read from its frame."""
    if question is None:
        kind, judges, prompts = _guess_type(frame), _judges(frame), _prompts(frame)
        factors, definition = _frame_factors(frame), {}
    else:
        kind, prompts = question.type_name, [str(p) for p in question.question_texts()]
        asked = question.judge_questions().items()
        judges = {j: q.type_name for j, q in asked if j in frame.columns}
        factors = question.factor_levels()
        definition = {"definition": question.model_dump(mode="json", exclude_none=True)}
    record = {"name": name, "type": kind, **plan.record(), "judges": judges, "prompts": prompts}
    return {**record, "factors": factors, **definition}


def _groups_of(frames: Mapping[str, pd.DataFrame]) -> dict[str, list[str]]:
    pairs = pd.concat([f[["group", "model"]].astype(str) for f in frames.values()])
    unique = pairs.drop_duplicates()
    return {str(g): list(part["model"]) for g, part in unique.groupby("group", sort=False)}


def prepare_folder(
    out: str | Path, *, what: str = "run folder", option: str = "--out / out="
) -> Path:
    """The folder `out`, created if missing; `OutputError` (naming the path) when it cannot
    be: a file is in the way, a part of the path is a file, no permission."""
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise OutputError(
            f"cannot write the {what} {folder}: it is a file.",
            hint=f"Give a folder (new or existing) with {option}.",
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise OutputError(
            f"cannot create the {what} {folder}: {why_not_writable(folder, error)}.",
            hint=f"Give a folder you can write to with {option}.",
        ) from None
    return folder


def write_run(
    out: str | Path,
    frames: Mapping[str, pd.DataFrame],
    *,
    questions: Mapping[str, Question] | None = None,
    groups: Mapping[str, Sequence[str]] | None = None,
    models: Mapping[str, Mapping[str, Any]] | None = None,
    metrics: Sequence[Metric] = (),
    baseline: Baseline | None = None,
    method: Method = DEFAULT_METHOD,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    by_model: bool = False,
    info: Mapping[str, Any] | None = None,
    curves: pd.DataFrame | None = None,
    by: Sequence[str] = (),
) -> Run:
    """Write a run folder from `frames` (`{question name: q.df(groups)}`) and return it; no
    report (`evals.experiments` writes one).

    `questions` (by the same names) give each question's type, scores, metrics, scales and
    prompts; without them these are read from the frames. `metrics` are added to every
    question whose frame has their scores; `baseline` (a group) writes `comparisons.csv`;
    `by` (grid factors) splits the statistics by level. `models` adds facts per model (job,
    kind, step, epoch), `by_model` writes `summary_by_model.csv`, `info` adds fields to
    run.json, `curves` is written as `training_curves.csv`.
    """
    if not frames:
        raise RunFolderError("no frames to write: a run needs at least one question's frame")
    check_method(method)
    questions = questions or {}
    group_map = (
        {str(g): [str(m) for m in ms] for g, ms in groups.items()}
        if groups is not None
        else _groups_of(frames)
    )
    check_baseline(baseline, group_map)
    plans = {
        name: score_plan(frame, questions.get(name), metrics) for name, frame in frames.items()
    }
    entries = [
        _question_entry(name, frame, questions.get(name), plans[name])
        for name, frame in frames.items()
    ]
    by = check_by(by, {entry["name"]: list(entry["factors"]) for entry in entries})
    folder = prepare_folder(out)
    content: dict[str, Any] = {
        "format": 1,
        "written": utc_now(),
        "groups": group_map,
        "models": {
            m: dict((models or {}).get(m, {}))
            for m in dict.fromkeys(m for ms in group_map.values() for m in ms)
        },
        "versions": package_versions(),
        **dict(info or {}),
    }
    taken: set[str] = set()
    try:
        # An old run's run.json would describe the new samples if writing stopped halfway:
        # the folder holds no run until the new run.json is written, last.
        (folder / RUN_FILE).unlink(missing_ok=True)
        for entry, frame in zip(entries, frames.values(), strict=True):
            entry["samples_file"] = samples_file_name(entry["name"], taken)
            entry["totals"] = frame_totals(frame)
            write_samples(frame, folder / entry["samples_file"])
        settings = dict(content.get("settings") or {})
        settings["statistics"] = write_statistics(
            folder,
            frames,
            plans,
            method=method,
            baseline=baseline,
            resamples=resamples,
            seed=seed,
            by=by,
            settings=settings,
        )
        content["settings"] = settings
        scores = {name: plan.scores for name, plan in plans.items()}
        per_model = (
            model_summary(frames, scores, resamples=resamples, seed=seed) if by_model else None
        )
        write_table(folder, MODEL_SUMMARY_FILE, per_model)
        write_table(folder, CURVES_FILE, None if curves is None or curves.empty else curves)
        content["questions"] = entries
        content["totals"] = {
            key: sum(e["totals"][key] for e in entries)
            for key in ("rows", "errors", "prompt_tokens", "completion_tokens", "list_cost")
        }
        write_run_file(folder, content)
    except OSError as error:
        where = error.filename or folder
        raise OutputError(
            f"cannot write the run folder {folder} ({where}): {describe_os_error(error)}.",
            hint="Free some space or fix the folder's permissions, then run again: every "
            "answer bought is in the cache, so nothing is bought twice.",
        ) from None
    run = load_run(folder)
    # The frames are at hand: the report draws from them instead of reading them back.
    run.keep_frames({name: frame.reset_index(drop=True) for name, frame in frames.items()})
    return run


def rewrite_questions(
    run: Run,
    frames: Mapping[str, pd.DataFrame],
    questions: Mapping[str, Question | None],
    info: Mapping[str, Any] | None = None,
) -> Run:
    """Replace some questions' samples in a run folder (judges added or replaced: `frames`
    by question name, with the question that now describes each), record their scores,
    metrics and scales in run.json with `info`'s fields, and compute the summary and
    comparisons again with the run's own baseline, method and factors. Returns the run read
    again; nothing is asked of any model."""
    content = dict(run.info)
    entries = [dict(entry) for entry in content.get("questions", [])]
    for entry in entries:
        name = entry["name"]
        if name not in frames:
            continue
        frame = frames[name]
        question = questions.get(name)
        plan = score_plan(frame, question, run.metrics(name))
        fresh = _question_entry(name, frame, question, plan)
        if question is None:
            fresh["definition"] = entry.get("definition")
        entry.update({k: v for k, v in fresh.items() if v is not None})
        entry["totals"] = frame_totals(frame)
        write_samples(frame, run.path / entry["samples_file"])
        run.keep_frames({name: frame})
    content["questions"] = entries
    content.update(info or {})
    write_run_file(run.path, content)
    return analyze_run(load_run(run.path))
