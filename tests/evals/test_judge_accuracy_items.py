"""Reading labelled items for a judge check: the three kinds from JSON lines and CSV, and
one sentence naming file, line and field for each kind of bad row."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evals.judge_accuracy import JudgeItemsError, read_items


def _jsonl(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


PAIR = {"question": "What is 2 + 2?", "answer_a": "4", "answer_b": "5", "better": "a"}


def test_pairs_are_read_with_their_ids_or_line_numbers(tmp_path: Path) -> None:
    items = read_items(_jsonl(tmp_path, [{**PAIR, "id": "sum"}, {**PAIR, "better": "B"}]))
    assert items.kind == "pair" and items.name == "items"
    assert [(i.id, i.gold) for i in items.items] == [("sum", "a"), ("2", "b")]


def test_labels_offered_are_the_files_labels_unless_a_row_names_its_own(tmp_path: Path) -> None:
    rows = [
        {"question": "q", "answer": "x", "label": "correct"},
        {"question": "q", "answer": "y", "label": "incorrect"},
        {"question": "q", "answer": "z", "label": "harmless", "labels": ["harmful", "harmless"]},
    ]
    items = read_items(_jsonl(tmp_path, rows))
    assert items.kind == "label"
    assert items.items[0].options == ("correct", "incorrect", "harmless")
    assert items.items[2].options == ("harmful", "harmless")


def test_scored_answers_are_read_from_csv_with_numbers_as_text(tmp_path: Path) -> None:
    path = tmp_path / "scored.csv"
    path.write_text(
        'id,question,answer,score\n1,"Say hi","Hello,\nfriend",80\n2,Say hi,Go away,5\n',
        encoding="utf-8",
    )
    items = read_items(path)
    assert items.kind == "score"
    assert [(i.answer, i.gold) for i in items.items] == [("Hello,\nfriend", 80.0), ("Go away", 5.0)]


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ([{**PAIR, "better": "c"}], ":1: field 'better' is 'c'"),
        ([PAIR, {"question": "q", "answer": "x", "score": 10}], ":2: a single answer with a gold"),
        ([{**PAIR, "betterr": "a"}], ":1: unknown field 'betterr'"),
        ([{"question": "q", "answer_a": "x", "better": "a"}], ":1: missing field 'answer_b'"),
        ([{"question": "q", "answer": "x", "score": 101}], ":1: field 'score' is 101"),
        ([{"question": "q", "answer": "x", "score": "high"}], ":1: field 'score' is 'high'"),
        ([{"question": "q", "answer": "x"}], ":1: a single answer needs exactly one"),
        ([{**PAIR, "id": 1}, {**PAIR, "id": "1"}], ":2: field 'id': '1' is also the id of line 1"),
        ([{"question": "q", "answer": "x", "label": "ok"}], ":1: field 'labels' is missing"),
        ([{**PAIR, "answer_a": 4}], ":1: field 'answer_a' must be text"),
    ],
)
def test_a_bad_row_is_named_by_file_line_and_field(
    tmp_path: Path, rows: list[dict[str, Any]], said: str
) -> None:
    path = _jsonl(tmp_path, rows)
    with pytest.raises(JudgeItemsError) as raised:
        read_items(path)
    assert raised.value.message.startswith(str(path))
    assert said in raised.value.message


def test_a_bad_csv_row_is_named_by_the_line_it_starts_on(tmp_path: Path) -> None:
    path = tmp_path / "pairs.csv"
    path.write_text(
        'question,answer_a,answer_b,better\n"two\nlines",x,y,a\n\nq,x,y,neither\n',
        encoding="utf-8",
    )
    with pytest.raises(JudgeItemsError, match=r"pairs\.csv:5: field 'better' is 'neither'"):
        read_items(path)


def test_a_file_that_is_not_jsonl_or_csv_or_is_empty_is_refused(tmp_path: Path) -> None:
    (tmp_path / "items.txt").write_text("x", encoding="utf-8")
    with pytest.raises(JudgeItemsError, match=r"not a \.jsonl or \.csv file"):
        read_items(tmp_path / "items.txt")
    with pytest.raises(JudgeItemsError, match="no items in this file"):
        read_items(_jsonl(tmp_path, []))
