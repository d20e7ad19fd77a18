"""Training-file validation: each rule reports FILE:LINE, tokens and cost come without network."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from labmgr.errors import InvalidTrainingFile, TrainingFileNotFound, UnknownBaseModel
from labmgr.finetuning import (
    ValidationReport,
    base_model_spec,
    estimate_text_tokens,
    validate_training_file,
)


def chat(i: int = 0, **extra: Any) -> dict[str, Any]:
    return {
        "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": f"Question {i}?"},
            {"role": "assistant", "content": f"Answer {i}."},
        ],
        **extra,
    }


def preference(i: int = 0) -> dict[str, Any]:
    return {
        "input": {"messages": [{"role": "user", "content": f"Question {i}?"}]},
        "preferred_output": [{"role": "assistant", "content": f"Good {i}."}],
        "non_preferred_output": [{"role": "assistant", "content": f"Bad {i}."}],
    }


def write(tmp_path: Path, lines: list[Any], name: str = "train.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def with_bad(tmp_path: Path, bad: Any, method: str = "supervised") -> ValidationReport:
    """Ten good examples, then `bad` on line 11."""
    good = [chat(i) if method == "supervised" else preference(i) for i in range(10)]
    return validate_training_file(write(tmp_path, [*good, bad]), method)  # type: ignore[arg-type]


def messages_on_line(report: ValidationReport, line: int) -> list[str]:
    return [issue.message for issue in report.errors if issue.line == line]


def test_a_good_file_is_valid_with_counts_tokens_and_cost(tmp_path: Path) -> None:
    report = validate_training_file(
        write(tmp_path, [chat(i) for i in range(12)]), base_model="gpt-4.1-mini"
    )
    assert report.valid, report.errors
    assert report.n_examples == 12
    assert report.n_tokens > 12 * 10
    assert report.base_model == "gpt-4.1-mini-2025-04-14"
    assert report.training_cost_per_epoch == pytest.approx(report.n_tokens * 5.0 / 1e6)


def test_without_a_base_model_cost_is_given_for_reference_bases(tmp_path: Path) -> None:
    report = validate_training_file(write(tmp_path, [chat(i) for i in range(10)]))
    assert set(report.cost_per_epoch) >= {"gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"}
    assert report.training_cost_per_epoch is None


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ("{not json", "not valid JSON"),
        ([1, 2], "must be a JSON object"),
        ({"messages": [], "extra": 1}, "unknown key 'extra'"),
        ({"mesages": []}, "did you mean 'messages'"),
        ({"messages": "hi"}, "messages must be a list"),
        ({"messages": []}, "messages is empty"),
        (
            {
                "messages": [
                    {"role": "function", "content": "x"},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "role 'function' is not one of",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x", "nme": "a"},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "unknown key 'nme' in a user message",
        ),
        (
            {"messages": [{"role": "user", "content": 5}, {"role": "assistant", "content": "y"}]},
            "content must be a string or a list of parts",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "audio"}]},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "unknown content part type 'audio'",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {
                        "role": "assistant",
                        "content": [{"type": "image_url", "image_url": {"url": "https://x/y.png"}}],
                    },
                ]
            },
            "image_url parts are only allowed in user messages",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x", "weight": 1},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "'weight' is only allowed on assistant messages",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y", "weight": 0.5},
                ]
            },
            "weight must be 0 or 1",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y", "weight": True},
                ]
            },
            "weight must be 0 or 1",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y", "weight": 0},
                ]
            },
            "every assistant message has weight 0",
        ),
        ({"messages": [{"role": "user", "content": "x"}]}, "no assistant message"),
        (
            {"messages": [{"role": "assistant", "content": "x"}, {"role": "user", "content": "y"}]},
            "the last message must be from the assistant",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x<|endoftext|>"},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "special token <|endoftext|>",
        ),
        (
            {"messages": [{"role": "user", "content": "x"}, {"role": "assistant"}]},
            "an assistant message needs 'content'",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {"id": "c", "type": "fn", "function": {"name": "f", "arguments": "{}"}}
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c", "content": "r"},
                    {"role": "assistant", "content": "ok"},
                ]
            },
            "type must be 'function'",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c",
                                "type": "function",
                                "function": {"name": "f", "arguments": {}},
                            }
                        ],
                    },
                    {"role": "assistant", "content": "ok"},
                ]
            },
            "arguments must be a JSON-encoded string",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "tool", "tool_call_id": "nope", "content": "r"},
                    {"role": "assistant", "content": "ok"},
                ]
            },
            "answers no earlier tool call",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y"},
                ],
                "tools": {"f": 1},
            },
            "tools must be a list",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y"},
                ],
                "parallel_tool_calls": "yes",
            },
            "parallel_tool_calls must be true or false",
        ),
        (preference(), "validate with --method dpo"),
    ],
)
def test_each_supervised_rule_reports_its_line(tmp_path: Path, bad: Any, expected: str) -> None:
    report = with_bad(tmp_path, bad)
    assert not report.valid
    found = messages_on_line(report, 11)
    assert any(expected in message for message in found), found
    assert all(issue.line == 11 for issue in report.errors)


@pytest.mark.parametrize(
    ("method", "bad", "expected"),
    [
        (
            "supervised",
            {
                "messages": [
                    {"role": "user", "content": [{"type": ["text"], "text": "x"}]},
                    {"role": "assistant", "content": "y"},
                ]
            },
            "messages[0].content[0]: unknown content part type ['text']",
        ),
        (
            "supervised",
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "image_url",
                                "image_url": {"url": "https://x.test/a.png", "detail": ["low"]},
                            }
                        ],
                    },
                    {"role": "assistant", "content": "y"},
                ]
            },
            "image detail must be one of low, high, auto",
        ),
        (
            "supervised",
            {
                "messages": [
                    {"role": "user", "content": "x"},
                    {"role": "assistant", "content": "y", "tool_calls": 5},
                ]
            },
            "messages[1].tool_calls must be a non-empty list",
        ),
        (
            "dpo",
            {
                **preference(),
                "preferred_output": [{"role": "assistant", "content": "a", "tool_calls": 5}],
            },
            "preferred_output[0].tool_calls must be a non-empty list",
        ),
    ],
)
def test_a_value_of_the_wrong_json_type_is_reported_on_its_line_not_raised(
    tmp_path: Path, method: str, bad: Any, expected: str
) -> None:
    report = with_bad(tmp_path, bad, method=method)
    assert not report.valid
    assert any(expected in message for message in messages_on_line(report, 11)), report.errors


def test_valid_tool_calling_example_passes(tmp_path: Path) -> None:
    example = {
        "messages": [
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": [{"type": "text", "text": "Weather?"}]},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": "{}"},
                    }
                ],
                "weight": 0,
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
            {"role": "assistant", "content": "Sunny.", "weight": 1},
        ],
        "tools": [{"type": "function", "function": {"name": "weather", "parameters": {}}}],
        "parallel_tool_calls": False,
    }
    report = with_bad(tmp_path, example)
    assert report.valid, report.errors
    assert not report.warnings


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        (
            {"input": {"messages": [{"role": "user", "content": "q"}]}, "preferred_output": []},
            "missing 'non_preferred_output'",
        ),
        (
            {**preference(), "preferred_output": [{"role": "user", "content": "x"}]},
            "must be an assistant message",
        ),
        (
            {**preference(), "preferred_output": [{"role": "assistant", "content": "a"}] * 2},
            "exactly one assistant message",
        ),
        (
            {**preference(), "input": {"messages": [{"role": "user", "content": "q"}], "extra": 1}},
            "input: unknown key 'extra'",
        ),
        (
            {**preference(), "input": {"messages": [{"role": "assistant", "content": "q"}]}},
            "must not end with an assistant message",
        ),
        (chat(), "validate with --method supervised"),
    ],
)
def test_each_preference_rule_reports_its_line(tmp_path: Path, bad: Any, expected: str) -> None:
    report = with_bad(tmp_path, bad, method="dpo")
    found = messages_on_line(report, 11)
    assert any(expected in message for message in found), found


def test_a_good_preference_file_is_valid(tmp_path: Path) -> None:
    path = write(tmp_path, [preference(i) for i in range(10)])
    report = validate_training_file(path, "dpo", base_model="gpt-4.1-nano")
    assert report.valid, report.errors
    assert report.cost_per_epoch["gpt-4.1-nano-2025-04-14"] > 0


def test_identical_preferred_and_rejected_is_a_warning(tmp_path: Path) -> None:
    same = {**preference(), "non_preferred_output": preference()["preferred_output"]}
    report = with_bad(tmp_path, same, method="dpo")
    assert report.valid
    assert any("identical" in w.message and w.line == 11 for w in report.warnings)


def test_dpo_on_a_base_without_dpo_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path, [preference(i) for i in range(10)])
    report = validate_training_file(path, "dpo", base_model="gpt-3.5-turbo")
    assert any("cannot be fine-tuned with method dpo" in e.message for e in report.errors)


def test_fewer_than_ten_examples_is_an_error_but_a_minimum_can_be_chosen(tmp_path: Path) -> None:
    path = write(tmp_path, [chat(i) for i in range(3)])
    report = validate_training_file(path)
    assert any("fine-tuning needs at least 10" in e.message for e in report.errors)
    assert validate_training_file(path, min_examples=1).valid


def test_duplicates_and_blank_lines_are_warnings_with_lines(tmp_path: Path) -> None:
    lines: list[Any] = [chat(i) for i in range(10)]
    lines[4:4] = [""]
    lines.append(chat(2))
    report = validate_training_file(write(tmp_path, lines))
    assert report.valid
    assert [(w.line, w.message) for w in report.warnings] == [
        (5, "blank line (remove it; the API may reject it)"),
        (12, "duplicate of the example on line 3"),
    ]


def test_example_over_the_base_model_token_limit_is_an_error(tmp_path: Path) -> None:
    limit = base_model_spec("gpt-3.5-turbo").example_token_limit
    huge = chat(0)
    huge["messages"][1]["content"] = "word " * (limit + 10)
    report = with_bad(tmp_path, huge)
    assert report.valid  # no base model given: no limit
    path = report.path
    limited = validate_training_file(path, base_model="gpt-3.5-turbo")
    assert any("limit of gpt-3.5-turbo-0125" in m for m in messages_on_line(limited, 11))
    assert limited.max_example_tokens > limit


def test_file_over_the_size_limit_is_rejected_before_reading(tmp_path: Path) -> None:
    path = write(tmp_path, [chat(i) for i in range(10)])
    report = validate_training_file(path, max_file_bytes=100)
    size = path.stat().st_size
    assert report.errors[0].message.startswith(f"the file is {size:,} bytes")
    assert report.n_examples == 0


def test_not_utf8_is_an_error_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, [chat(i) for i in range(10)])
    with path.open("ab") as handle:
        handle.write(b'{"messages": "\xff"}\n')
    report = validate_training_file(path)
    [message] = messages_on_line(report, 11)
    assert message.startswith("not UTF-8 text (byte 0xFF at column 15;")


def test_raise_for_errors_lists_file_line_messages(tmp_path: Path) -> None:
    report = with_bad(tmp_path, {"messages": []})
    with pytest.raises(InvalidTrainingFile) as caught:
        report.raise_for_errors()
    assert f"{report.path}:11: messages is empty" in caught.value.message
    assert caught.value.report is report


def test_missing_file_and_unknown_base_are_typed_errors(tmp_path: Path) -> None:
    with pytest.raises(TrainingFileNotFound, match=r"missing\.jsonl"):
        validate_training_file(tmp_path / "missing.jsonl")
    path = write(tmp_path, [chat(i) for i in range(10)])
    with pytest.raises(UnknownBaseModel, match="gpt-9"):
        validate_training_file(path, base_model="gpt-9")


def test_fine_tuned_id_is_accepted_as_base(tmp_path: Path) -> None:
    spec = base_model_spec("ft:gpt-4o-mini-2024-07-18:org:run-1:AbC123")
    assert spec.name == "gpt-4o-mini-2024-07-18"


def test_token_estimate_is_deterministic_and_grows_with_text() -> None:
    sentence = "The quick brown fox jumps over the lazy dog."
    assert estimate_text_tokens(sentence) == estimate_text_tokens(sentence)
    assert 8 <= estimate_text_tokens(sentence) <= 13
    assert estimate_text_tokens(sentence * 10) > 9 * estimate_text_tokens(sentence)
