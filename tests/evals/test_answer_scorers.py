"""How an answer is checked against its right answer: each free-form scorer and normalisation
option, stop sequences, letters read from sampled text and from first-token probabilities —
on small frames, through `Question.mark_answers`, the step every frame of a question with a
target goes through."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd
import pytest

from evals import Question


def _frame(answers: list[Any], paraphrase_ix: list[int] | None = None) -> pd.DataFrame:
    n = len(answers)
    return pd.DataFrame(
        {
            "model": ["m"] * n,
            "group": ["g"] * n,
            "answer": answers,
            "question": ["q"] * n,
            "paraphrase_ix": paraphrase_ix or [0] * n,
            "sample_ix": list(range(n)),
            "error": [None] * n,
        }
    )


def _correct(answers: list[Any], **options: Any) -> list[float]:
    question = Question.create(type="free_form", name="q", paraphrases=["Q?"], **options)
    return question.mark_answers(_frame(answers))["correct"].tolist()


def test_exact_match_ignores_case_and_whitespace_but_not_punctuation_by_default() -> None:
    marked = _correct(["Paris", "  paris \n", "Paris.", "PARIS, France", "Lyon"], target="Paris")
    assert marked == [1.0, 1.0, 0.0, 0.0, 0.0]


def test_each_normalisation_option_can_be_turned_on_or_off() -> None:
    answers = ["Paris.", "PARIS", "Pa  ris"]
    assert _correct(answers, target="Paris", ignore_punctuation=True) == [1.0, 1.0, 0.0]
    assert _correct(answers, target="Paris", ignore_case=False) == [0.0, 0.0, 0.0]
    assert _correct(["Pa  ris", " Pa ris "], target="Pa ris") == [1.0, 1.0]
    assert _correct(["Pa  ris", " Pa ris "], target="Pa ris", ignore_whitespace=False) == [
        0.0,
        0.0,
    ]


def test_includes_finds_the_target_anywhere_in_the_answer() -> None:
    marked = _correct(["The capital is Paris.", "paris", "Lyon"], target="Paris", scorer="includes")
    assert marked == [1.0, 1.0, 0.0]


def test_regex_searches_the_answer_and_follows_ignore_case() -> None:
    answers = ["It is 42.", "forty-two", "FORTY-TWO", "4 2"]
    assert _correct(answers, target=r"\b42\b|forty-two", scorer="regex") == [1.0, 1.0, 1.0, 0.0]
    strict = _correct(answers, target="forty-two", scorer="regex", ignore_case=False)
    assert strict == [0.0, 1.0, 0.0, 0.0]


def test_numeric_reads_the_last_number_and_allows_the_tolerance() -> None:
    answers = ["17 + 25 = 42", "42.0", "about 41.6", "1,042", "no idea"]
    assert _correct(answers, target="42", scorer="numeric") == [1.0, 1.0, 0.0, 0.0, 0.0]
    loose = _correct(answers, target=42, scorer="numeric", tolerance=0.5)
    assert loose == [1.0, 1.0, 1.0, 0.0, 0.0]


def test_a_list_of_acceptable_answers_and_one_target_per_paraphrase() -> None:
    question = Question.create(
        type="free_form",
        name="q",
        paraphrases=["Capital of France?", "Symbol of gold?"],
        target=[["Paris", "Paris, France"], "Au"],
    )
    marked = question.mark_answers(_frame(["paris, france", "Au", "Paris", "Ag"], [0, 1, 0, 1]))
    assert marked["correct"].tolist() == [1.0, 1.0, 1.0, 0.0]
    assert marked["target"].tolist() == [
        "Paris | Paris, France",
        "Au",
        "Paris | Paris, France",
        "Au",
    ]
    assert marked["item"].tolist() == ["0", "1", "0", "1"]


def test_an_answer_is_cut_at_the_first_stop_sequence_before_it_is_scored() -> None:
    marked = _correct(["42\n\nBecause 17 + 25 = 42", "42"], target="42", stop=["\n\n"])
    assert marked == [1.0, 1.0]
    assert _correct(["42\n\nBecause 17 + 25 = 42"], target="42") == [0.0]


def test_a_row_without_an_answer_has_no_correct_value() -> None:
    marked = _correct([None, "", "Paris"], target="Paris")
    assert math.isnan(marked[0]) and math.isnan(marked[1]) and marked[2] == 1.0


def _choice(**options: Any) -> Question:
    return Question.create(
        type="multiple_choice",
        name="add",
        paraphrases=["What is 17 + 25?"],
        choices=["32", "42", "52", "43"],
        target=1,
        **options,
    )


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        ("B.", "B"),
        ("B) 42", "B"),
        ("(C) 52", "C"),
        ("The answer is D", "D"),
        ("I pick A, no wait, B", "B"),
        ("E", None),  # not one of the four option letters
        ("forty-two", None),
    ],
)
def test_a_sampled_answer_s_letter_is_read_as_the_contract_says(text: str, letter: str) -> None:
    marked = _choice().mark_answers(_frame([text]))
    read = marked["answer"].iloc[0]
    assert read == letter if letter else pd.isna(read)
    assert marked["raw_answer"].tolist() == [text]
    assert marked["correct"].tolist() == [float(letter == "B")]


def test_marking_a_marked_frame_again_gives_the_same_frame() -> None:
    question = _choice()
    once = question.mark_answers(_frame(["B", "The answer is C", None]))
    twice = question.mark_answers(once)
    pd.testing.assert_frame_equal(once, twice)


def test_logprob_letters_sum_case_and_space_variants_and_normalise_over_the_options() -> None:
    question = _choice(score="logprobs")
    tokens = {"B": 0.3, " B": 0.1, "b": 0.1, "A": 0.2, "C": 0.1, "Hello": 0.2}
    marked = question.mark_answers(_frame([tokens, {"Hello": 1.0}, None]))
    assert marked["answer"].iloc[0] == "B" and marked["answer"].iloc[1:].isna().all()
    assert marked["probs"].iloc[0] == pytest.approx({"A": 0.25, "B": 0.625, "C": 0.125, "D": 0})
    assert marked["p_correct"].iloc[0] == pytest.approx(0.625)
    assert marked["correct"].iloc[0] == 1.0
    assert marked["p_correct"].iloc[1] == 0.0 and marked["correct"].iloc[1] == 0.0
    assert math.isnan(marked["p_correct"].iloc[2]) and math.isnan(marked["correct"].iloc[2])


@pytest.mark.parametrize("target", [1, "B", "42", "1"])
def test_a_target_is_an_index_a_letter_or_the_choice_s_text(target: Any) -> None:
    question = Question.create(
        type="multiple_choice",
        name="add",
        paraphrases=["What is 17 + 25?"],
        choices=["32", "42", "52", "43"],
        target=target,
    )
    assert question.mark_answers(_frame(["B"]))["target"].tolist() == ["B"]


def test_the_prompt_letters_each_choice_and_asks_for_a_letter() -> None:
    assert _choice().prompts() == [
        "What is 17 + 25?\n\nA. 32\nB. 42\nC. 52\nD. 43\n\nAnswer with a single letter."
    ]
