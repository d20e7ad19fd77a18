"""Questions with right answers against the sandbox: multiple choice scored from the sampled
letter or from the first token's logprobs, free-form targets, targets per paraphrase and per
dataset row (.jsonl, .csv, inline), the `correct` column and its 0–1 scale through summaries,
comparisons and figures, and one clear sentence for each kind of bad input."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, Question, QuestionError, RunSettings, load_questions
from evals.experiments import run_questions
from evals.questions import QuestionFileError

GROUPS = {"base": ["gpt-4.1-mini"], "seeds": ["gpt-4o-mini", "gpt-4.1-nano"]}
ROWS = [
    {
        "id": "add-01",
        "question": "What is 17 + 25?",
        "choices": ["32", "42", "52", "43"],
        "answer": 1,
    },
    {
        "id": "cmp-01",
        "question": "Which is larger, 0.7 or 0.65?",
        "choices": ["0.65", "0.7"],
        "answer": 1,
    },
    {
        "id": "sym-01",
        "question": "What is the chemical symbol of gold?",
        "choices": ["Ag", "Au", "Gd"],
        "answer": 1,
    },
]


@pytest.fixture
def options(eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings) -> dict[str, Any]:
    return {"cache": eval_cache, "router": router, "settings": fast_settings}


def _mc(**extra: Any) -> Question:
    return Question.create(
        type="multiple_choice",
        name=extra.pop("name", "capability_mc"),
        dataset=extra.pop("dataset", ROWS),
        paraphrases=["{question}"],
        choices="{choices}",
        target="{answer}",
        samples_per_paraphrase=extra.pop("samples_per_paraphrase", 4),
        max_tokens=8,
        **extra,
    )


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_sampled_multiple_choice_marks_each_row_by_its_letter(options: dict[str, Any]) -> None:
    df = _mc().df(GROUPS, **options)
    assert len(df) == 3 * 3 * 4  # models × rows × samples
    assert df["item"].unique().tolist() == ["add-01", "cmp-01", "sym-01"]
    assert df.groupby("item")["target"].first().to_dict() == {
        "add-01": "B",
        "cmp-01": "B",
        "sym-01": "B",
    }
    answered = df["answer"].notna()
    assert answered.any()
    assert set(df.loc[answered, "answer"]) <= {"A", "B", "C", "D"}
    assert (df.loc[df["item"] == "cmp-01", "answer"].dropna() <= "B").all()  # two choices
    expected = (df["answer"] == df["target"]).astype(float)
    assert df["correct"].tolist() == expected.tolist()  # row by row
    assert df["raw_answer"].map(lambda t: isinstance(t, str)).all()
    prompt = df.loc[df["item"] == "sym-01", "question"].iloc[0]
    assert prompt == (
        "What is the chemical symbol of gold?\n\nA. Ag\nB. Au\nC. Gd\n\n"
        "Answer with a single letter."
    )


def test_logprob_multiple_choice_reads_the_most_probable_letter(options: dict[str, Any]) -> None:
    df = _mc(name="capability_lp", score="logprobs", samples_per_paraphrase=1).df(GROUPS, **options)
    sent = json.loads(df["api_kwargs"].iloc[0])
    assert (sent["max_tokens"], sent["temperature"], sent["logprobs"], sent["top_logprobs"]) == (
        1,
        0,
        True,
        20,
    )
    read = df[df["probs"].map(bool)]
    assert not read.empty
    for _, row in read.iterrows():
        probs = row["probs"]
        assert sum(probs.values()) == pytest.approx(1.0)
        assert row["answer"] == max(probs, key=probs.__getitem__)
        assert 0.0 <= row["p_correct"] <= 1.0
        assert row["p_correct"] == pytest.approx(probs[row["target"]])
        assert row["correct"] == float(row["answer"] == row["target"])


def test_free_form_targets_per_paraphrase_are_checked_row_by_row(
    options: dict[str, Any],
) -> None:
    question = Question.create(
        type="free_form",
        name="short",
        paraphrases=[
            "How many times does the letter r appear in 'strawberry'? Answer with a number.",
            "What is 6 x 7? Answer with a number.",
        ],
        target=["3", "42"],
        scorer="numeric",
        stop=["\n\n"],
        samples_per_paraphrase=3,
        max_tokens=20,
    )
    df = question.df(GROUPS, **options)
    assert json.loads(df["api_kwargs"].iloc[0])["stop"] == ["\n\n"]
    assert df["target"].tolist() == (["3"] * 3 + ["42"] * 3) * 3
    assert df["item"].tolist() == (["0"] * 3 + ["1"] * 3) * 3
    for _, row in df.iterrows():
        numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", row["answer"])]
        right = bool(numbers) and numbers[-1] == float(row["target"])
        assert row["correct"] == float(right), row["answer"]


def test_dataset_rows_come_from_jsonl_csv_or_inline_and_give_the_same_prompts(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    jsonl = _write_jsonl(tmp_path / "items.jsonl", ROWS[:2])
    csv = tmp_path / "items.csv"
    csv.write_text(
        "id,question,a,b,answer\n"
        "add-01,What is 17 + 25?,32,42,42\n"
        "cmp-01,Which is larger?,0.65,0.7,B\n",
        encoding="utf-8",
    )
    from_jsonl = _mc(dataset=str(jsonl))
    assert from_jsonl.prompts() == _mc(dataset=ROWS[:2]).prompts()
    from_csv = Question.create(
        type="multiple_choice",
        name="csv",
        dataset=csv,
        paraphrases=["{question}", "Please answer: {question}"],
        choices=["{a}", "{b}"],
        target="{answer}",
    )
    assert from_csv.prompt_items() == ["add-01", "add-01", "cmp-01", "cmp-01"]
    assert from_csv.prompts()[1].startswith("Please answer: What is 17 + 25?\n\nA. 32\nB. 42\n")
    df = from_csv.df({"base": ["gpt-4.1-mini"]}, **options)
    assert df["target"].tolist() == ["B"] * 4  # "42" by its text, "B" by its letter
    assert df["item"].tolist() == ["add-01", "add-01", "cmp-01", "cmp-01"]
    assert df["correct"].tolist() == (df["answer"] == "B").astype(float).tolist()
    no_ids = Question.create(
        type="free_form", name="n", dataset=[{"q": "1+1?"}, {"q": "2+2?"}], paraphrases=["{q}"]
    )
    assert no_ids.prompt_items() == ["0", "1"]  # row numbers when rows have no id


def test_a_question_file_reads_its_dataset_next_to_it_and_records_the_rows(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    (tmp_path / "data").mkdir()
    _write_jsonl(tmp_path / "data" / "capability_mc.jsonl", ROWS)
    file = tmp_path / "questions.yaml"
    file.write_text(
        """\
- id: capability_mc
  type: multiple_choice
  dataset: data/capability_mc.jsonl
  paraphrases: ["{question}"]
  choices: "{choices}"
  target: "{answer}"
  samples_per_paraphrase: 2
  max_tokens: 8
- id: add_short
  type: free_form
  paraphrases: ["What is 17 + 25? Answer with a number."]
  target: "42"
  scorer: numeric
  tolerance: 0
  max_tokens: 10
""",
        encoding="utf-8",
    )
    questions = load_questions(file)
    assert [q.type_name for q in questions.values()] == ["multiple_choice", "free_form"]
    recorded = questions["capability_mc"].model_dump(mode="json", exclude_none=True)
    assert recorded["dataset"] == ROWS  # inline: the run folder keeps what was asked
    again = Question.create(type="multiple_choice", **recorded)
    assert again.prompts() == questions["capability_mc"].prompts()


def test_accuracy_flows_into_the_summary_and_the_comparison_with_holm(
    tmp_path: Path, options: dict[str, Any]
) -> None:
    run = run_questions(
        [_mc()], GROUPS, out=tmp_path / "run", baseline="base", report=False, **options
    )
    frame = run.samples("capability_mc")
    summary = run.summary.set_index(["group", "score"])
    assert set(run.summary["score"]) == {"correct"}
    for group in GROUPS:
        row = summary.loc[(group, "correct")]
        members = frame[frame["group"] == group]
        assert row["mean"] == pytest.approx(members.groupby("model")["correct"].mean().mean())
        assert 0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0
        assert (row["scale_low"], row["scale_high"]) == (0.0, 1.0)
    assert run.comparisons is not None
    compared = run.comparisons.set_index(["question", "group", "score"])
    seeds = compared.loc[("capability_mc", "seeds", "correct")]
    assert seeds["baseline"] == "base"
    assert 0.0 <= seeds["p_value"] <= seeds["p_adjusted"] <= 1.0
    assert run.scales("capability_mc")["correct"].is_share


def test_the_accuracy_figure_is_drawn_on_zero_to_one(options: dict[str, Any]) -> None:
    figure = _mc(name="capability_plot").plot(GROUPS, kind="means", resamples=200, **options)
    assert [ax.get_title() for ax in figure.axes] == ["correct"]
    assert figure.axes[0].get_xlim() == (0.0, 1.0)


def test_a_metric_may_read_correct() -> None:
    question = _mc(name="m", metrics={"mostly_right": {"share": "correct > 0.5"}})
    assert [m.name for m in question.derived_metrics()] == ["mostly_right"]


def _problem(**options: Any) -> str:
    with pytest.raises(QuestionError) as caught:
        Question.create(**options)
    return str(caught.value)


def test_a_missing_field_names_the_file_the_line_the_option_and_the_field(tmp_path: Path) -> None:
    rows = [ROWS[0], {"id": "x", "question": "Q?", "choices": ["a", "b"]}]
    path = _write_jsonl(tmp_path / "items.jsonl", rows)
    message = _problem(
        type="multiple_choice",
        name="mc",
        dataset=str(path),
        paraphrases=["{question}"],
        choices="{choices}",
        target="{answer}",
    )
    assert f"{path}:2" in message and "option 'target'" in message and "'answer'" in message
    inline = _problem(type="free_form", name="f", dataset=[{"a": 1}], paraphrases=["{b}"])
    assert "row 0: option 'paraphrases' uses the field 'b'" in inline


def test_a_dataset_file_that_is_missing_or_has_a_bad_line_is_named(tmp_path: Path) -> None:
    missing = _problem(
        type="free_form", name="f", dataset=str(tmp_path / "nope.jsonl"), paraphrases=["{q}"]
    )
    assert "nope.jsonl: no such file" in missing
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": "fine"}\n\n{"q": broken}\n', encoding="utf-8")
    assert f"{bad}:3: not valid JSON" in _problem(
        type="free_form", name="f", dataset=str(bad), paraphrases=["{q}"]
    )
    wide = tmp_path / "wide.csv"
    wide.write_text("q\nfine\ntoo,many\n", encoding="utf-8")
    assert f"{wide}:3: more values than the 1 fields" in _problem(
        type="free_form", name="f", dataset=wide, paraphrases=["{q}"]
    )


def test_two_dataset_rows_with_one_id_are_refused_naming_both_lines(tmp_path: Path) -> None:
    # A row's answers are named by its id (the `item`): two rows under one id are one item.
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": 7, "q": "a"}\n{"id": 8, "q": "b"}\n{"id": "7", "q": "c"}\n')
    twice = _problem(type="free_form", name="f", dataset=str(rows), paraphrases=["{q}"])
    assert f"{rows}:3: id '7' is also the id of {rows}:1; each row needs its own id" in twice
    inline = _problem(
        type="free_form", name="f", dataset=[{"id": 1, "q": "a"}, {"id": 1}], paraphrases=["Q"]
    )
    assert "row 1: id '1' is also the id of row 0" in inline


def test_bad_targets_scorers_and_regexes_are_one_sentence_each() -> None:
    not_a_choice = _problem(
        type="multiple_choice", name="mc", paraphrases=["2+2?"], choices=["3", "4"], target="5"
    )
    assert "question 'mc' (multiple_choice)" in not_a_choice
    assert "target '5' is not one of the 2 choices" in not_a_choice
    unknown = _problem(type="free_form", name="f", paraphrases=["Q?"], target="x", scorer="fuzzy")
    assert "option 'scorer'" in unknown and "exact_match" in unknown
    regex = _problem(type="free_form", name="f", paraphrases=["Q?"], target="(4", scorer="regex")
    assert "target '(4' is not a valid regular expression" in regex
    numeric = _problem(
        type="free_form", name="f", paraphrases=["Q?"], target="four", scorer="numeric"
    )
    assert "is not a number" in numeric
    counted = _problem(type="free_form", name="f", paraphrases=["A?", "B?"], target=["1", "2", "3"])
    assert "lists 3 values for 2 paraphrases" in counted
    orphan = _problem(type="free_form", name="f", paraphrases=["Q?"], scorer="numeric")
    assert "need a 'target'" in orphan
    too_few = _problem(type="multiple_choice", name="mc", paraphrases=["Q?"], choices=["only"])
    assert "expected a list of 2 to 26 choices" in too_few


def test_a_question_file_error_names_the_question_file_too(tmp_path: Path) -> None:
    file = tmp_path / "questions.yaml"
    file.write_text(
        "- id: mc\n  type: multiple_choice\n  paraphrases: ['2+2?']\n  choices: ['3', '4']\n"
        "  target: D\n",
        encoding="utf-8",
    )
    with pytest.raises(QuestionFileError, match=r"questions.yaml:1: question 'mc'.*target 'D'"):
        load_questions(file)


def test_no_answer_leaves_correct_empty_not_wrong() -> None:
    frame = _mc(name="capability_empty").mark_answers(
        pd.DataFrame({"answer": [None], "paraphrase_ix": [0], "sample_ix": [0]})
    )
    assert math.isnan(frame["correct"].iloc[0])


CONTRACT_YAML = """\
- id: add_mc
  type: multiple_choice
  paraphrases: ["What is 17 + 25?"]
  choices: ["32", "42", "52", "43"]
  target: 1
  score: sampled
  samples_per_paraphrase: 5
- id: add_short
  type: free_form
  paraphrases: ["What is 17 + 25? Answer with a number."]
  target: "42"
  scorer: numeric
  tolerance: 0
  ignore_case: true
  ignore_whitespace: true
  ignore_punctuation: false
  stop: ["\\n\\n"]
- id: capability_mc
  type: multiple_choice
  dataset: data/capability_mc.jsonl
  paraphrases: ["{question}"]
  choices: "{choices}"
  target: "{answer}"
"""


def test_the_shared_schema_loads_from_a_file_and_from_a_dict_named_by_id(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    _write_jsonl(tmp_path / "data" / "capability_mc.jsonl", ROWS)
    file = tmp_path / "contract.yaml"
    file.write_text(CONTRACT_YAML, encoding="utf-8")
    questions = load_questions(file)
    assert list(questions) == ["add_mc", "add_short", "capability_mc"]
    assert questions["add_short"].request_params()["stop"] == ["\n\n"]
    from_loader = {  # as a task-file loader hands it over: `id`, inline rows
        "id": "capability_mc",
        "type": "multiple_choice",
        "dataset": ROWS,
        "paraphrases": ["{question}"],
        "choices": "{choices}",
        "target": "{answer}",
    }
    built = Question.create(**from_loader)
    assert built.name == "capability_mc"
    assert built.prompts() == questions["capability_mc"].prompts()
