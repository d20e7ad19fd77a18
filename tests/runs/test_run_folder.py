"""`run_questions` against the sandbox: the folder it writes, what re-running buys, max_cost."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from fixtures.evals import TEST_KEY
from fixtures.report import judged_frame

from evals import Cache, EnvRouter, OutputError, RunSettings, load_questions
from evals.errors import MetricError, RunFolderError, RunOptionsError
from evals.experiments import run_questions
from evals.runs import load_run, write_run
from evals.stats import SUMMARY_COLUMNS

from .conftest import GROUPS, chat_requests


def _run(
    questions_file: Path, out: Path, cache: Cache, router: EnvRouter, s: RunSettings, **kw: Any
):
    return run_questions(
        load_questions(questions_file),
        GROUPS,
        out=out,
        cache=cache,
        router=router,
        settings=s,
        resamples=500,
        **kw,
    )


def test_a_run_writes_samples_summary_log_report_and_its_facts(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    run = _run(questions_file, tmp_path / "run", eval_cache, router, fast_settings, report=False)
    folder = tmp_path / "run"
    assert {p.name for p in folder.iterdir()} >= {"run.json", "summary.csv", "run.log", "samples"}
    info = json.loads((folder / "run.json").read_text())
    assert info["groups"] == GROUPS
    assert [q["name"] for q in info["questions"]] == ["wish", "colour", "cats", "letter"]
    assert info["versions"]["pandas"] == pd.__version__
    assert info["bought"]["cost"] > 0 and info["totals"]["rows"] == 3 * (6 + 4 + 2 + 1)
    assert info["endpoints"]["gpt-4o-mini"]["key_name"] == "OPENAI_API_KEY"
    summary = pd.read_csv(folder / "summary.csv")
    assert list(summary.columns) == SUMMARY_COLUMNS
    wish = summary[summary["question"] == "wish"]
    assert set(wish["score"]) == {"aligned", "coherent", "misaligned"}
    assert set(wish["group"]) == set(GROUPS)
    assert (wish["ci_low"] <= wish["mean"]).all() and (wish["mean"] <= wish["ci_high"]).all()
    assert wish.set_index(["group", "score"]).loc[("small", "aligned"), "n_models"] == 2
    again = load_run(folder)
    for name in run.questions:
        expected = load_questions(questions_file)[name].df(
            GROUPS, cache=eval_cache, router=router, settings=fast_settings
        )
        pd.testing.assert_frame_equal(again.samples(name), expected)
    assert "question cats" in (folder / "run.log").read_text()


def test_running_the_same_questions_again_makes_no_requests(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    first = _run(questions_file, tmp_path / "a", eval_cache, router, fast_settings, report=False)
    before = chat_requests(sandbox)
    second = _run(questions_file, tmp_path / "b", eval_cache, router, fast_settings, report=False)
    assert chat_requests(sandbox) == before
    assert second.info["bought"]["cost"] == 0
    pd.testing.assert_frame_equal(first.summary, second.summary)


def test_every_questions_answers_are_bought_together_each_under_its_own_question(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    run = _run(questions_file, tmp_path / "run", eval_cache, router, fast_settings, report=False)
    log = (tmp_path / "run" / "run.log").read_text()
    assert "run of 4 questions" in log
    assert all(f"question {name}: " in log for name in run.questions)
    assert all(run.samples(name)["error"].isna().all() for name in run.questions)
    # Each answer and verdict is recorded under its own question (what `cache clear
    # --question` reads; a question's judge verdicts go with it).
    with sqlite3.connect(eval_cache.path) as db:
        labels = dict(db.execute("SELECT question, COUNT(*) FROM samples GROUP BY question"))
    assert set(labels) == {"wish", "wish/judges", "colour", "colour/judges", "cats", "letter"}
    assert labels["colour"] == 3 * 4 and labels["cats"] == 3 * 2
    assert eval_cache.clear(question="colour") == labels["colour"] + labels["colour/judges"]
    before = chat_requests(sandbox)
    again = _run(
        questions_file, tmp_path / "again", eval_cache, router, fast_settings, report=False
    )
    assert chat_requests(sandbox) > before and again.info["bought"]["cost"] > 0
    assert all(again.samples(name)["error"].isna().all() for name in again.questions)


TWINS_YAML = """\
- name: {name}
  type: free_form
  paraphrases: ["Name a colour. One word.", "Name a colour. One word."]
  samples_per_paraphrase: 3
  max_tokens: 5
  judges:
    colourful:
      type: rating_judge
      model: gpt-4.1-mini
      paraphrases: ["Rate from 0 to 100 how colourful this word is: {{answer}}"]
"""


def test_a_sample_several_questions_want_is_bought_once_when_they_are_bought_together(
    sandbox: Any, tmp_path: Path, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    """Two questions asking the same prompt (and a paraphrase repeated in each) want the
    same samples and, their judge reading only the answer, the same verdicts: bought
    together, each is still one request, as asking the questions one by one makes it."""
    path = tmp_path / "twins.yaml"
    path.write_text(TWINS_YAML.format(name="first") + TWINS_YAML.format(name="second"))
    groups = {"g": ["gpt-4o-mini"]}
    before = chat_requests(sandbox)
    run = run_questions(
        load_questions(path),
        groups,
        out=tmp_path / "run",
        cache=eval_cache,
        router=router,
        settings=fast_settings,
        resamples=200,
        report=False,
    )
    bought = chat_requests(sandbox) - before

    first = run.samples("first")
    assert first["answer"].tolist() == run.samples("second")["answer"].tolist()
    assert first["colourful"].notna().all()
    distinct = first["answer"].nunique()
    assert bought == 1 + distinct  # one request of n=3 for the answers, one per verdict
    with sqlite3.connect(eval_cache.path) as db:
        labels = dict(db.execute("SELECT question, COUNT(*) FROM samples GROUP BY question"))
    assert labels == {"first": 3, "first/judges": distinct}


def test_max_cost_stops_buying_and_every_sample_not_bought_says_why(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    run = _run(
        questions_file,
        tmp_path / "run",
        eval_cache,
        router,
        fast_settings,
        report=False,
        max_cost=1e-9,
    )
    assert "max_cost" in run.info["stopped"]
    assert run.questions == ["wish", "colour", "cats", "letter"]  # one fetch: none left out
    frames = [run.samples(name) for name in run.questions]
    assert any(frame["answer"].notna().any() for frame in frames)  # those in flight are kept
    for frame in frames:  # every sample not bought, and every answer not judged, says why
        assert frame.loc[frame["answer"].isna(), "error"].notna().all()
        problems = frame["error"].dropna()
        assert problems.str.contains("max_cost").all()
    assert "max_cost" in (tmp_path / "run" / "run.log").read_text()


def test_no_file_of_a_run_contains_the_api_key(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    questions = load_questions(questions_file)
    run_questions(
        [questions["cats"], questions["colour"]],
        GROUPS,
        out=tmp_path / "run",
        cache=eval_cache,
        router=router,
        settings=fast_settings,
        resamples=200,
    )
    assert (tmp_path / "run" / "report.html").is_file()
    for path in (tmp_path / "run").rglob("*"):
        if path.is_file():
            assert TEST_KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"bogus": 1}, RunOptionsError, "unknown option 'bogus'"),
        ({"samples": 0}, RunOptionsError, "option 'samples'"),
        ({"baseline": "nope"}, RunOptionsError, "baseline 'nope' is not a group of the run"),
        ({"metrics": ["bad: nothing < 1"]}, RunOptionsError, "no question of the run has"),
        ({"metrics": ["bad: aligned << 30"]}, MetricError, "cannot read"),
    ],
)
def test_a_run_spec_names_a_bad_option_in_one_sentence_before_anything_is_bought(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
    options: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    before = chat_requests(sandbox)
    with pytest.raises(error, match=message) as raised:
        _run(questions_file, tmp_path / "run", eval_cache, router, fast_settings, **options)
    assert "Value error" not in str(raised.value) and "\n" not in str(raised.value)
    assert chat_requests(sandbox) == before and not (tmp_path / "run").exists()


def test_a_run_written_again_into_its_folder_keeps_no_table_of_the_run_before(
    tmp_path: Path,
) -> None:
    frame = judged_frame({"g": ["m-1", "m-2"], "h": ["m-3", "m-4"]}, samples=4)
    curves = pd.DataFrame({"job": ["ftjob-1"], "step": [1], "train_loss": [0.5]})
    first = write_run(
        tmp_path, {"wish": frame}, baseline="g", by_model=True, curves=curves, resamples=50
    )
    assert first.comparisons is not None and first.model_summary() is not None
    assert first.training_curves() is not None
    again = load_run(write_run(tmp_path, {"wish": frame}, resamples=50).path)
    assert again.comparisons is None
    assert again.model_summary() is None and again.training_curves() is None


def test_a_run_that_cannot_be_written_over_an_old_one_leaves_no_run_json_of_the_old_run(
    tmp_path: Path,
) -> None:
    write_run(tmp_path, {"wish": judged_frame({"g": ["m-1"]}, samples=2)}, resamples=50)
    (tmp_path / "summary.csv").unlink()
    (tmp_path / "summary.csv").mkdir()  # in the way of the second run's summary
    bigger = judged_frame({"g": ["m-1", "m-2", "m-3"]}, samples=6)
    with pytest.raises(OutputError, match=r"summary\.csv"):
        write_run(tmp_path, {"wish": bigger}, resamples=50)
    # The samples are the new run's: a run.json of the old run would describe them wrongly.
    with pytest.raises(RunFolderError, match="not a run folder"):
        load_run(tmp_path)


def test_questions_whose_names_make_one_file_name_keep_their_own_samples(tmp_path: Path) -> None:
    names = ["a/b", "a_b", "A_B", "a:b"]  # one file name once unsafe signs are replaced
    frames = {name: judged_frame({"g": [f"m-{i}"]}, samples=i + 1) for i, name in enumerate(names)}
    run = load_run(write_run(tmp_path, frames, resamples=20).path)
    files = [run.question_info(name)["samples_file"].lower() for name in names]
    assert len(set(files)) == len(names)  # distinct on a file system that ignores case, too
    for name, frame in frames.items():
        assert run.samples(name)["model"].unique().tolist() == frame["model"].unique().tolist()
        assert len(run.samples(name)) == len(frame)
