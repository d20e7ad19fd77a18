"""Reinforcement graders checked against the SDK's grader types before anything is spent,
and the example fields their templates read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labmgr.errors import InvalidGrader
from labmgr.finetuning.jobs.graders import check_grader, grader_item_fields, load_grader

STRING_CHECK = {
    "type": "string_check",
    "name": "exact",
    "input": "{{sample.output_text}}",
    "reference": "{{item.answer}}",
    "operation": "eq",
}
VALID: list[dict[str, Any]] = [
    STRING_CHECK,
    {
        "type": "text_similarity",
        "name": "close",
        "input": "{{sample.output_text}}",
        "reference": "{{ item.reference }}",
        "evaluation_metric": "fuzzy_match",
    },
    {
        "type": "score_model",
        "name": "judge",
        "model": "o4-mini",
        "input": [
            {"role": "system", "content": "Score 0 to 1."},
            {"role": "user", "content": "Q: {{item.question}} A: {{sample.output_text}}"},
        ],
        "range": [0, 1],
        "sampling_params": {"temperature": 0.0},
    },
    {
        "type": "python",
        "name": "code",
        "source": "def grade(sample, item):\n    return float(item['answer'] in sample)",
    },
    {
        "type": "multi",
        "name": "both",
        "calculate_output": "exact",
        "graders": {**STRING_CHECK, "reference": "{{item.label}}"},
    },
]


@pytest.mark.parametrize("grader", VALID, ids=lambda g: g["type"])
def test_every_grader_type_the_sdk_knows_is_accepted(grader: dict[str, Any]) -> None:
    assert check_grader(grader) == grader


def test_the_fields_a_grader_reads_are_found_in_nested_templates() -> None:
    assert [grader_item_fields(g) for g in VALID] == [
        ["answer"],
        ["reference"],
        ["question"],
        [],
        ["label"],
    ]


@pytest.mark.parametrize(
    ("grader", "message"),
    [
        ({"name": "x"}, "grader.type is None; a grader's type is one of"),
        ({"type": "label_model", "name": "x"}, "grader.type is 'label_model'"),
        (
            {**VALID[1], "evaluation_metric": "jaccard"},
            "grader.evaluation_metric: input should be 'cosine',",
        ),
        (
            {**VALID[2], "range": [0, "high"]},
            "grader.range.1: input should be a valid number",
        ),
        (
            {**VALID[4], "graders": {"type": "python", "name": "p"}},
            "grader.graders.source: field required (a python grader)",
        ),
        (
            {**VALID[4], "graders": [STRING_CHECK]},
            "grader.graders must be one grader object",
        ),
        ({**VALID[3], "timeout": 5}, "unknown key 'timeout' for a python grader"),
    ],
)
def test_a_bad_grader_names_the_field_at_fault(grader: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidGrader) as caught:
        check_grader(grader)
    assert message in caught.value.message


def test_grader_files_are_read_as_json_or_yaml_with_clear_errors(tmp_path: Path) -> None:
    as_json = tmp_path / "g.json"
    as_json.write_text(json.dumps(STRING_CHECK))
    as_yaml = tmp_path / "g.yaml"
    as_yaml.write_text("\n".join(f"{k}: '{v}'" for k, v in STRING_CHECK.items()) + "\n")
    assert load_grader(as_json) == load_grader(as_yaml) == STRING_CHECK
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(InvalidGrader, match=r"broken\.json cannot be read as JSON"):
        load_grader(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n")
    with pytest.raises(InvalidGrader, match=r"must hold one object \(a mapping\), not list"):
        load_grader(listed)
    with pytest.raises(InvalidGrader, match=r"missing\.yaml does not exist"):
        load_grader(tmp_path / "missing.yaml")
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("type: string_check\nname: x\n")
    with pytest.raises(InvalidGrader, match=rf"{wrong}\.input: field required"):
        load_grader(wrong)
