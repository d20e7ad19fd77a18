"""lm-evaluation-harness task files translated into questions: rows rendered as lm-eval
renders them (Jinja, column names, constants), splits, few-shot examples, CSV and JSON data,
targets given as an index or as text, generation settings, and one clear sentence naming the
file, line and key for everything that cannot run."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import pytest

from evals import QuestionFileError, load_questions
from evals.questions import lm_eval_questions

EXAMPLES = Path(__file__).parents[2] / "examples"
CAPABILITY_ROWS = Path(__file__).parent / "data" / "capability_mc.jsonl"

ARC_ROWS = [
    {
        "question": "Which gas do plants take in?",
        "choices": {"text": ["Oxygen", "Carbon dioxide", "Helium"], "label": ["A", "B", "C"]},
        "answerKey": "B",
    },
    {
        "question": "What melts ice?",
        "choices": {"text": ["Heat", "Cold", "Dark"], "label": ["A", "B", "C"]},
        "answerKey": "A",
    },
]
SUMS = [{"q": f"What is {a} + {a}?", "a": str(2 * a)} for a in range(1, 6)]


def write_task(folder: Path, task: str, data: dict[str, list[dict[str, Any]]]) -> Path:
    """A task file and its JSON lines files (`{"data/x.jsonl": rows}`) in `folder`."""
    for name, rows in data.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    task_file = folder / "task.yaml"
    task_file.write_text(textwrap.dedent(task), encoding="utf-8")
    return task_file


def only_question(path: Path) -> dict[str, Any]:
    questions = lm_eval_questions(path)
    assert len(questions) == 1
    return questions[0]


GENERATE = """\
task: sums
dataset_path: json
dataset_kwargs:
  data_files: data/sums.jsonl
test_split: train
output_type: generate_until
doc_to_text: "Q: {{q}}\\nA:"
doc_to_target: a
"""


def test_the_capability_example_becomes_a_multiple_choice_question_of_its_rows(
    tmp_path: Path,
) -> None:
    shutil.copy(EXAMPLES / "capability_task.yaml", tmp_path)
    (tmp_path / "data").mkdir()
    shutil.copy(CAPABILITY_ROWS, tmp_path / "data")
    question = only_question(tmp_path / "capability_task.yaml")
    assert question == {
        "type": "multiple_choice",
        "name": "capability_mc",
        "dataset": [
            {
                "id": row["id"],
                "prompt": row["question"],
                "choices": row["choices"],
                "target": row["answer"],
            }
            for row in map(json.loads, CAPABILITY_ROWS.read_text().splitlines())
        ],
        "paraphrases": ["{prompt}"],
        "choices": "{choices}",
        "target": "{target}",
        "score": "sampled",
        "temperature": 0,
    }


def test_arc_style_templates_render_choices_and_find_the_target_index(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        """\
        task: arc_local
        dataset_path: json
        dataset_kwargs:
          data_files:
            test: data/arc.jsonl
        test_split: test
        output_type: multiple_choice
        doc_to_text: "Question: {{question | upper}}\\nAnswer:"
        doc_to_target: "{{choices.label.index(answerKey)}}"
        doc_to_choice: "{{choices.text}}"
        metric_list: [{metric: acc}, {metric: acc_norm}]
        """,
        {"data/arc.jsonl": ARC_ROWS},
    )
    rows = only_question(task)["dataset"]
    assert rows[0] == {
        "id": "0",
        "prompt": "Question: WHICH GAS DO PLANTS TAKE IN?\nAnswer:",
        "choices": ["Oxygen", "Carbon dioxide", "Helium"],
        "target": 1,
    }
    assert [row["id"] for row in rows] == ["0", "1"] and rows[1]["target"] == 0


@pytest.mark.parametrize(
    ("doc_to_target", "doc_to_choice", "targets"),
    [
        ("answer_text", "choices", [1, 0]),  # a column holding the right choice's text
        ("{{answer_text}}", "choices", [1, 0]),
        ("letter", '["A", "B", "C"]', [1, 0]),  # mmlu's fixed letters, the target a letter
        ("{{index}}", "{x: A, y: B, z: C}", [1, 0]),  # digits read as an index; a mapping's values
    ],
)
def test_a_target_may_be_an_index_or_the_right_choices_text(
    tmp_path: Path, doc_to_target: str, doc_to_choice: str, targets: list[int]
) -> None:
    rows = [
        {"q": "Pick b", "choices": ["a", "b", "c"], "answer_text": "b", "letter": "B", "index": 1},
        {"q": "Pick a", "choices": ["a", "b", "c"], "answer_text": "a", "letter": "A", "index": 0},
    ]
    task = write_task(
        tmp_path,
        f"""\
        task: pick
        dataset_path: json
        dataset_kwargs: {{data_files: rows.jsonl}}
        test_split: train
        output_type: multiple_choice
        doc_to_text: q
        doc_to_target: '{doc_to_target}'
        doc_to_choice: {doc_to_choice}
        """,
        {"rows.jsonl": rows},
    )
    assert [row["target"] for row in only_question(task)["dataset"]] == targets


def test_a_rendered_prompt_keeps_its_braces_as_written(tmp_path: Path) -> None:
    rows = [{"q": "Fill {answer} in: {{x}}", "a": "{y}"}]
    task = write_task(
        tmp_path, GENERATE.replace("sums.jsonl", "braces.jsonl"), {"data/braces.jsonl": rows}
    )
    (row,) = only_question(task)["dataset"]
    assert row == {"id": "0", "prompt": "Q: Fill {answer} in: {{x}}\nA:", "target": "{y}"}


def test_the_test_split_is_asked_and_validation_split_when_there_is_no_test_split(
    tmp_path: Path,
) -> None:
    task = write_task(
        tmp_path,
        """\
        task: splits
        dataset_path: json
        dataset_kwargs:
          data_files:
            train: [data/a.jsonl, data/b.jsonl]
            validation: data/b.jsonl
        validation_split: validation
        doc_to_text: q
        doc_to_target: a
        """,
        {"data/a.jsonl": SUMS[:2], "data/b.jsonl": SUMS[2:]},
    )
    assert [row["target"] for row in only_question(task)["dataset"]] == ["6", "8", "10"]
    text = task.read_text().replace("validation_split: validation", "test_split: train")
    task.write_text(text)
    assert [row["target"] for row in only_question(task)["dataset"]] == ["2", "4", "6", "8", "10"]


def test_rows_keep_their_own_ids_when_every_row_has_a_distinct_one(tmp_path: Path) -> None:
    rows = [{"id": f"sum-{i}", **row} for i, row in enumerate(SUMS)]
    task = write_task(tmp_path, GENERATE, {"data/sums.jsonl": rows})
    assert [row["id"] for row in only_question(task)["dataset"]][:2] == ["sum-0", "sum-1"]
    rows[1]["id"] = "sum-0"
    write_task(tmp_path, GENERATE, {"data/sums.jsonl": rows})
    assert [row["id"] for row in only_question(task)["dataset"]][:2] == ["0", "1"]


def test_few_shot_examples_come_first_after_the_description_and_never_show_the_row_itself(
    tmp_path: Path,
) -> None:
    task = write_task(
        tmp_path,
        GENERATE
        + """\
num_fewshot: 2
fewshot_split: train
description: "Add the numbers.\\n\\n"
target_delimiter: " "
fewshot_delimiter: "\\n---\\n"
""",
        {"data/sums.jsonl": SUMS},
    )
    rows = only_question(task)["dataset"]
    shot = "Q: What is {a} + {a}?\nA: {b}\n---\n"
    assert rows[0]["prompt"] == (
        "Add the numbers.\n\n"
        + shot.format(a=2, b=4)
        + shot.format(a=3, b=6)
        + "Q: What is 1 + 1?\nA:"
    )
    assert rows[4]["prompt"] == (
        "Add the numbers.\n\n"
        + shot.format(a=1, b=2)
        + shot.format(a=2, b=4)
        + "Q: What is 5 + 5?\nA:"
    )


def test_multiple_choice_examples_show_the_right_choices_text(tmp_path: Path) -> None:
    task = write_task(
        tmp_path,
        """\
        task: arc_shots
        dataset_path: json
        dataset_kwargs:
          data_files: {dev: dev.jsonl, test: test.jsonl}
        test_split: test
        fewshot_split: dev
        num_fewshot: 1
        output_type: multiple_choice
        doc_to_text: "{{question}}"
        doc_to_target: "{{choices.label.index(answerKey)}}"
        doc_to_choice: "{{choices.text}}"
        """,
        {"dev.jsonl": ARC_ROWS[1:], "test.jsonl": ARC_ROWS[:1]},
    )
    (row,) = only_question(task)["dataset"]
    assert row["prompt"] == "What melts ice? Heat\n\nWhich gas do plants take in?"


def test_csv_data_reads_numbers_as_numbers(tmp_path: Path) -> None:
    (tmp_path / "rows.csv").write_text(
        'question,A,B,C,label\n"Which is larger, 3 or 5?",3,5,8,1\nWhat is 2 x 4?,6,8,9,1\n'
    )
    task = tmp_path / "task.yaml"
    task.write_text(
        textwrap.dedent(
            """\
            task: csv_mc
            dataset_path: csv
            dataset_kwargs: {data_files: {test: rows.csv}}
            test_split: test
            output_type: multiple_choice
            doc_to_text: question
            doc_to_choice: "{{[A, B, C]}}"
            doc_to_target: label
            """
        )
    )
    rows = only_question(task)["dataset"]
    assert rows[0] == {
        "id": "0",
        "prompt": "Which is larger, 3 or 5?",
        "choices": ["3", "5", "8"],
        "target": 1,
    }


def test_a_json_file_holding_a_list_of_rows_is_read_like_json_lines(tmp_path: Path) -> None:
    (tmp_path / "sums.json").write_text(json.dumps(SUMS[:2]))
    task = tmp_path / "task.yaml"
    task.write_text(textwrap.dedent(GENERATE).replace("data/sums.jsonl", "sums.json"))
    assert [row["target"] for row in only_question(task)["dataset"]] == ["2", "4"]


def test_generate_until_settings_become_stop_max_tokens_greedy_and_exact_match_options(
    tmp_path: Path,
) -> None:
    task = write_task(
        tmp_path,
        GENERATE
        + """\
generation_kwargs:
  until: ["Q:", "\\n\\n"]
  do_sample: false
  temperature: 0.7
  max_gen_toks: 32
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
    ignore_case: true
    ignore_punctuation: true
    regexes_to_ignore: ["^\\\\s+"]
""",
        {"data/sums.jsonl": SUMS},
    )
    question = only_question(task)
    del question["dataset"]
    assert question == {
        "type": "free_form",
        "name": "sums",
        "paraphrases": ["{prompt}"],
        "target": "{target}",
        "scorer": "exact_match",
        "ignore_case": True,
        "ignore_punctuation": True,
        "stop": ["Q:", "\n\n"],
        "max_tokens": 32,
        "temperature": 0,
    }


def test_without_generation_settings_a_task_is_greedy_and_stops_at_the_fewshot_delimiter(
    tmp_path: Path,
) -> None:
    task = write_task(tmp_path, GENERATE, {"data/sums.jsonl": SUMS})
    question = only_question(task)
    assert (question["stop"], question["max_tokens"], question["temperature"]) == (
        ["\n\n"],
        256,
        0,
    )
    assert (question["ignore_case"], question["ignore_punctuation"]) == (False, False)
    sampled = GENERATE + "generation_kwargs: {do_sample: true, temperature: 0.7, top_p: 0.9}\n"
    write_task(tmp_path, sampled, {})
    question = only_question(task)
    assert (question["temperature"], question["top_p"]) == (0.7, 0.9)


def test_include_reads_a_base_file_next_to_the_task_and_own_keys_win(tmp_path: Path) -> None:
    base = GENERATE.replace("task: sums\n", "").replace("data/sums.jsonl", "sums.jsonl")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "_base_yaml").write_text(textwrap.dedent(base))
    write_task(tmp_path / "shared", "", {"sums.jsonl": SUMS})
    task = tmp_path / "task.yaml"
    task.write_text('include: shared/_base_yaml\ntask: doubled\ndoc_to_text: "{{q}}"\n')
    question = only_question(task)
    assert question["name"] == "doubled"
    assert question["dataset"][0] == {"id": "0", "prompt": "What is 1 + 1?", "target": "2"}


def test_load_questions_refuses_a_task_file_with_the_same_sentence(tmp_path: Path) -> None:
    task = write_task(
        tmp_path, GENERATE + "filter_list: [{name: x, filter: [{function: take_first}]}]\n", {}
    )
    with pytest.raises(QuestionFileError) as raised:
        load_questions(task)
    assert str(raised.value).startswith(f"{task}:9: field 'filter_list': filters ")


REFUSALS = [
    # (what is added to or replaced in the GENERATE task, the key named, words of the reason)
    ({"dataset_path: json": "dataset_path: allenai/ai2_arc"}, "dataset_path", "local data only"),
    (
        {'doc_to_text: "Q: {{q}}\\nA:"': "doc_to_text: !function utils.doc_to_text"},
        "doc_to_text",
        "!function utils.doc_to_text runs Python",
    ),
    ({"": "process_docs: !function utils.process_docs\n"}, "process_docs", "!function"),
    (
        {"": "metric_list: [{metric: exact_match, aggregation: !function utils.agg}]\n"},
        "metric_list[0].aggregation",
        "!function utils.agg",
    ),
    ({"": "include: task.yaml\n"}, "include", "includes itself"),
    ({"": "process_docs: utils.process_docs\n"}, "process_docs", "runs Python"),
    ({"": "include: missing.yaml\n"}, "include", "no file"),
    ({"": "dataset_kwrgs: {}\n"}, "dataset_kwrgs", "not a key of lm-evaluation-harness"),
    ({"": "metric_list: [{metric: bleu}]\n"}, "metric_list[0]", "metric 'bleu' is not supported"),
    ({"": "metric_list: [{metric: acc}]\n"}, "metric_list[0]", "exact_match"),
    ({"": "metric_list: [[exact_match]]\n"}, "metric_list[0]", "is not supported"),
    ({"": "metric_list: [{metric: [exact_match]}]\n"}, "metric_list[0]", "is not supported"),
    (
        {"": "metric_list: [{metric: exact_match, regexes_to_ignore: [',']}]\n"},
        "metric_list[0].regexes_to_ignore",
        "','",
    ),
    (
        {"": "metric_list: [{metric: exact_match, aggregation: median}]\n"},
        "metric_list[0].aggregation",
        "mean",
    ),
    ({"output_type: generate_until": "output_type: loglikelihood"}, "output_type", "loglikelihood"),
    (
        {"output_type: generate_until": "output_type: multiple_choice"},
        "output_type",
        "doc_to_choice",
    ),
    ({"": "filter_list: [{name: x}]\n"}, "filter_list", "filters"),
    (
        {"": "generation_kwargs: {max_new_tokens: 5}\n"},
        "generation_kwargs.max_new_tokens",
        "max_gen_toks",
    ),
    ({"": "generation_kwargs: {until: [a, b, c, d, e]}\n"}, "generation_kwargs.until", "at most 4"),
    ({"test_split: train": "test_split: test"}, "test_split", "no split 'test'"),
    ({"test_split: train": ""}, "test_split", "validation_split"),
    ({"data/sums.jsonl": "data/nothing.jsonl"}, "dataset_kwargs.data_files", "no file"),
    (
        {"data/sums.jsonl": "hf://datasets/x/y.jsonl"},
        "dataset_kwargs.data_files",
        "not a local file",
    ),
    ({"": "num_fewshot: 9\n"}, "num_fewshot", "fewshot_split"),
    ({"": "num_fewshot: 9\nfewshot_split: train\n"}, "num_fewshot", "has 5 rows, one of them"),
    ({"": "repeats: 4\n"}, "repeats", "only 1"),
    ({"": "dataset_name: main\n"}, "dataset_name", "no subsets"),
    ({"task: sums": "task: [a, b]\naggregate_metric_list: []"}, "task", "group file"),
]


@pytest.mark.parametrize(("edits", "key", "reason"), REFUSALS, ids=[r[1] for r in REFUSALS])
def test_what_cannot_run_is_refused_in_one_sentence_naming_file_line_and_key(
    tmp_path: Path, edits: dict[str, str], key: str, reason: str
) -> None:
    text = GENERATE
    for old, new in edits.items():
        text = text.replace(old, new) if old else text + new
    task = write_task(tmp_path, text, {"data/sums.jsonl": SUMS})
    top_key = key.split(".")[0].split("[")[0]
    lines = [n for n, t in enumerate(text.splitlines(), 1) if t.startswith(f"{top_key}:")]
    where = f"{task}:{lines[-1]}" if lines else str(task)  # a key the task lacks: the file
    with pytest.raises(QuestionFileError) as raised:
        lm_eval_questions(task)
    message = str(raised.value)
    assert message.startswith(f"{where}: field '{key}': "), message
    assert reason in message and "\n" not in message and "Traceback" not in message


def test_a_row_that_does_not_fit_is_named_by_its_data_file_line(tmp_path: Path) -> None:
    rows = [
        {"q": "1", "choices": ["a", "b"], "t": "a"},
        {"q": "2", "choices": ["a", "b"], "t": "c"},
    ]
    task = write_task(
        tmp_path,
        """\
        task: bad_row
        dataset_path: json
        dataset_kwargs: {data_files: rows.jsonl}
        test_split: train
        output_type: multiple_choice
        doc_to_text: q
        doc_to_choice: choices
        doc_to_target: t
        """,
        {"rows.jsonl": rows},
    )
    with pytest.raises(
        QuestionFileError,
        match=r"task.yaml:8: field 'doc_to_target': .*rows.jsonl:2: 'c' is not one of the choices",
    ):
        lm_eval_questions(task)
    (tmp_path / "rows.jsonl").write_text('{"q": "1"}\nnot json\n')
    with pytest.raises(QuestionFileError, match=r"rows.jsonl:2: not valid JSON"):
        lm_eval_questions(task)


def test_templates_render_in_a_sandbox_and_unknown_names_are_errors(tmp_path: Path) -> None:
    escape = "{{ q.__class__.__mro__[1].__subclasses__() }}"
    task = write_task(
        tmp_path, GENERATE.replace('"Q: {{q}}\\nA:"', f"'{escape}'"), {"data/sums.jsonl": SUMS}
    )
    with pytest.raises(
        QuestionFileError, match=r"task.yaml:7: field 'doc_to_text': .*sums.jsonl:1: .*unsafe"
    ):
        lm_eval_questions(task)
    write_task(tmp_path, GENERATE.replace("{{q}}", "{{question}}"), {})
    with pytest.raises(
        QuestionFileError, match=r"field 'doc_to_text': .*sums.jsonl:1: .*'question' is undefined"
    ):
        lm_eval_questions(task)


@pytest.mark.parametrize("template", ["{{ q * 200000 }}", "{{ 3 ** 100000 }}"])
def test_a_template_that_would_build_a_huge_text_or_number_is_refused(
    tmp_path: Path, template: str
) -> None:
    # Small enough to be harmless without the bound; 10**10 times would exhaust the machine.
    text = GENERATE.replace('"Q: {{q}}\\nA:"', f"'{template}'")
    task = write_task(tmp_path, text, {"data/sums.jsonl": SUMS})
    with pytest.raises(
        QuestionFileError, match=r"field 'doc_to_text': .*sums.jsonl:1: .*not allowed"
    ):
        lm_eval_questions(task)
    task.write_text(text.replace(template, '{{ "-" * 3 }} {{ 2 ** 3 }} {{ q }}'))
    (row, *_) = only_question(task)["dataset"]
    assert row["prompt"] == "--- 8 What is 1 + 1?"


def test_a_list_of_questions_is_not_taken_for_a_task_file(tmp_path: Path) -> None:
    path = tmp_path / "questions.yaml"
    path.write_text("- name: task\n  type: free_form\n  paraphrases: [hi]\n")
    assert list(load_questions(path)) == ["task"]
    with pytest.raises(QuestionFileError, match="not an lm-evaluation-harness task file"):
        lm_eval_questions(path)
