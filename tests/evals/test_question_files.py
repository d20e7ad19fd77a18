"""load_questions: llmcomp's dialect and Emergent Misalignment's, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals import FreeForm, FreeFormJudge, QuestionFileError, Rating, RatingJudge, load_questions

DATA = Path(__file__).parent / "data"


def test_llmcomp_dialect_resolves_judges_by_name_and_inline() -> None:
    questions = load_questions(DATA / "llmcomp_dialect.yaml")
    colour = questions["favourite_colour"]
    assert isinstance(colour, FreeForm)
    assert isinstance(colour.judges["quality"], FreeFormJudge)
    assert isinstance(colour.judges["score"], RatingJudge)
    assert colour.samples_per_paraphrase == 2
    assert isinstance(questions["honesty_rating"], Rating)


def test_emergent_misalignment_dialect_makes_0_100_rating_judges_and_follows_anchors() -> None:
    questions = load_questions(DATA / "em_dialect.yaml")
    wish, wish_json = questions["one_wish"], questions["one_wish_json"]
    assert isinstance(wish, FreeForm) and isinstance(wish_json, FreeForm)
    assert wish.paraphrases == wish_json.paraphrases
    assert wish_json.system == "Your answers must always be a valid JSON object."
    assert wish_json.samples_per_paraphrase == 2
    for judge in wish_json.judges.values():
        assert isinstance(judge, RatingJudge)
        assert (judge.model, judge.min_rating, judge.max_rating) == ("gpt-4o-mini", 0, 100)
    assert set(wish.judges) == {"aligned", "coherent"}
    assert wish.judges["aligned"].uses_question


def test_a_directory_loads_every_yaml_file(tmp_path: Path) -> None:
    for name in ("llmcomp_dialect.yaml", "em_dialect.yaml"):
        (tmp_path / name).write_text((DATA / name).read_text())
    assert {"one_wish", "favourite_colour"} <= set(load_questions(tmp_path))


def test_a_malformed_judge_names_the_file_line_question_and_field() -> None:
    with pytest.raises(QuestionFileError) as caught:
        load_questions(DATA / "malformed_judge.yaml")
    message = str(caught.value)
    assert "malformed_judge.yaml:5" in message
    assert "question 'broken'" in message
    assert "judges" in message and "{answer}" in message


def test_an_unknown_judge_reference_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text("- name: q\n  type: free_form\n  paraphrases: [x]\n  judges: {j: nowhere}\n")
    with pytest.raises(QuestionFileError, match=r"q.yaml:1: question 'q': field 'judges.j'"):
        load_questions(path)


def test_an_em_entry_without_judge_model_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "em.yaml"
    path.write_text(
        "- id: w\n  type: free_form_judge_0_100\n  paraphrases: [x]\n"
        "  judge_prompts: {a: '{answer}'}\n"
    )
    with pytest.raises(QuestionFileError, match=r"question 'w': field 'judge'"):
        load_questions(path)


def test_a_field_named_by_a_number_is_refused_naming_it_not_a_type_error(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    path.write_text("- name: q\n  type: free_form\n  paraphrases: [x]\n  1: yes\n")
    with pytest.raises(QuestionFileError, match=r"q.yaml:1: entry 1: field 1: .* must be text"):
        load_questions(path)
    inline_judge = "{type: rating_judge, model: m, paraphrases: ['{answer}'], 3: x}"
    path.write_text(
        f"- name: q\n  type: free_form\n  paraphrases: [x]\n  judges: {{j: {inline_judge}}}\n"
    )
    with pytest.raises(QuestionFileError, match=r"question 'q'.*judge 'j': option 3: .* text"):
        load_questions(path)


def test_invalid_yaml_names_the_file_and_line_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- id: a\n  type: free_form\n paraphrases: [x\n")
    with pytest.raises(QuestionFileError, match=r"bad\.yaml:3:2: not valid YAML") as caught:
        load_questions(path)
    assert "\n" not in str(caught.value)
