"""Samples files: pandas reads back exactly the frame that was written (dict columns too)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evals import Cache, EnvRouter, RunSettings, load_questions
from evals.runs import read_samples, write_samples

from .conftest import GROUPS


def _same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b)
    for column in a.columns:
        for x, y in zip(a[column].tolist(), b[column].tolist(), strict=True):
            if isinstance(x, float) and math.isnan(x):
                assert isinstance(y, float) and math.isnan(y), column
            else:
                assert type(x) is type(y) and x == y, (column, x, y)


def test_frames_of_every_question_type_read_back_exactly(
    sandbox: Any,
    tmp_path: Path,
    questions_file: Path,
    eval_cache: Cache,
    router: EnvRouter,
    fast_settings: RunSettings,
) -> None:
    questions = load_questions(questions_file)
    for name, question in questions.items():
        frame = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
        back = read_samples(write_samples(frame, tmp_path / f"{name}.parquet"))
        _same(frame, back)
    rating = read_samples(tmp_path / "cats.parquet")
    assert all(isinstance(k, int) for p in rating["probs"] for k in p)
    letters = read_samples(tmp_path / "letter.parquet")
    assert all(isinstance(k, str) for d in letters["answer"] for k in d)


@pytest.mark.parametrize(
    "values",
    [
        [{1: 0.25, 2: 0.75}, None, {"7": 1.0}],
        [{"b": 0.25, "a": 0.75, "é": 0.0}, None, {}],
        [{100: 0.5, -3: 0.5}, {0: 1.0}, None],
        [{"x": 1.0}, {"y": 2}, None],  # an int value: not a map of floats
        [{"__items__": [1, 2]}, {"nested": {3: [1, None]}}, {}],
        ["<script>alert(1)</script>", None, '{"json": "looking"}'],
        [1.5, None, "mixed"],
    ],
)
def test_object_columns_keep_their_values_and_key_types(tmp_path: Path, values: list) -> None:
    frame = pd.DataFrame({"model": ["a", "b", "c"], "value": pd.Series(values, dtype=object)})
    _same(frame, read_samples(write_samples(frame, tmp_path / "x.parquet")))


def test_dict_columns_are_stored_as_arrow_maps_and_an_error_table_reads_only_its_columns(
    tmp_path: Path,
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    frame = pd.DataFrame(
        {
            "model": ["a", "b"],
            "answer": [50.0, math.nan],
            "raw_answer": pd.Series([{"50": 0.9, "x": 0.1}, {}], dtype=object),
            "probs": pd.Series([{50: 1.0}, None], dtype=object),
            "error": pd.Series([None, "judge aligned: refused"], dtype=object),
        }
    )
    path = write_samples(frame, tmp_path / "rated.parquet")
    schema = pq.read_schema(path)
    for name, key in (("raw_answer", "string"), ("probs", "int64")):
        stored = schema.field(name).type
        assert isinstance(stored, pa.MapType), name
        assert (str(stored.key_type), str(stored.item_type)) == (key, "double")
    errors = read_samples(path, columns=["model", "error"])
    assert list(errors.columns) == ["model", "error"]
    assert errors["error"].tolist() == [None, "judge aligned: refused"]
    _same(frame, read_samples(path))


def test_rows_sharing_one_verdicts_dicts_read_back_as_each_rows_own_values(
    tmp_path: Path,
) -> None:
    shared, other = {"7": 0.75, " 7": 0.25}, {"x": 1.0}
    frame = pd.DataFrame(
        {
            "model": list("abcdef"),
            "raw_answer": pd.Series([shared, None, shared, {}, other, shared], dtype=object),
            "probs": pd.Series([{7: 1.0}, None, {7: 1.0}, None, {}, {3: 0.5, 9: 0.5}]),
        }
    )
    back = read_samples(write_samples(frame, tmp_path / "shared.parquet"))
    _same(frame, back)
    assert back["raw_answer"].tolist()[4] == {"x": 1.0}
