"""`load_questions(path)`: question YAML files in llmcomp's dialect (`name`, `type`, `judges`
naming entries or inline) and Emergent Misalignment's (`id`, `judge`, `judge_prompts`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from evals.errors import QuestionError, QuestionFileError
from evals.questions._base import Question
from evals.questions._lm_eval import is_task_node, lm_eval_questions

_EM_KEYS = {"id", "type", "judge", "judge_prompts"}
_EM_TYPES = {"free_form_judge_0_100": True, "free_form_judge": True, "free_form": False}


def _yaml_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
    if not path.exists():
        raise QuestionFileError(f"{path}: no such file or directory")
    return [path]


def _yaml_error(path: Path, error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    if mark is None:
        return f"{path}: not valid YAML: {problem}"
    return (
        f"{path}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {problem} "
        "(check the indentation and brackets on this line and the one before)"
    )


def _entries(path: Path) -> Iterator[tuple[int, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)  # constructs nothing: !function passes
        task = is_task_node(node)
        data = None if task else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError) as error:
        raise QuestionFileError(f"{path}: cannot read: {error}") from None
    except yaml.YAMLError as error:
        raise QuestionFileError(_yaml_error(path, error)) from None
    if task:  # an lm-evaluation-harness task file: one question
        yield from ((1, question) for question in lm_eval_questions(path))
        return
    if data is None:
        return
    if not isinstance(data, list) or not isinstance(node, yaml.SequenceNode):
        raise QuestionFileError(f"{path}: expected a list of questions at the top level")
    for item_node, entry in zip(node.value, data, strict=True):
        yield item_node.start_mark.line + 1, entry


def _em_options(entry: dict[str, Any], where: str) -> dict[str, Any]:
    """An Emergent Misalignment entry's `free_form` options (`Question.create` checks them)."""
    em_type = entry.get("type")
    if em_type not in _EM_TYPES:
        valid = ", ".join(_EM_TYPES)
        raise QuestionFileError(f"{where}: field 'type': {em_type!r} is not one of {valid}")
    options = {k: v for k, v in entry.items() if k not in _EM_KEYS}
    options["name"] = str(entry["id"])
    if _EM_TYPES[em_type]:
        judge_model = entry.get("judge")
        prompts = entry.get("judge_prompts")
        if not isinstance(judge_model, str):
            raise QuestionFileError(f"{where}: field 'judge': the judge model name is required")
        if not isinstance(prompts, dict) or not prompts:
            raise QuestionFileError(
                f"{where}: field 'judge_prompts': a mapping of judge name to prompt is required"
            )
        judge = {"type": "rating_judge", "model": judge_model, "min_rating": 0, "max_rating": 100}
        options["judges"] = {str(n): {**judge, "paraphrases": [p]} for n, p in prompts.items()}
    return options


def load_questions(path: str | Path) -> dict[str, Question]:
    """`{name: Question}` of every question (judges included) of a YAML file, or of every
    `*.yaml`/`*.yml` in a directory, in file order; QuestionFileError naming file and line."""
    raw: dict[str, dict[str, Any]] = {}
    places: dict[str, str] = {}
    for file in _yaml_files(Path(path)):
        for index, (line, entry) in enumerate(_entries(file)):
            where = f"{file}:{line}: entry {index + 1}"
            if not isinstance(entry, dict):
                raise QuestionFileError(f"{where}: expected a mapping with 'name' and 'type'")
            odd = next((key for key in entry if not isinstance(key, str)), None)
            if odd is not None:
                raise QuestionFileError(f"{where}: field {odd!r}: a field's name must be text")
            by_id = "id" in entry and "name" not in entry
            is_em = by_id and (entry.get("type") in _EM_TYPES or "judge_prompts" in entry)
            name = entry.get("id") if by_id else entry.get("name")
            if not isinstance(name, str | int) or str(name) == "":
                field = "id" if by_id else "name"
                raise QuestionFileError(f"{where}: field '{field}' is required")
            where = f"{file}:{line}: question '{name}'"
            if is_em:
                question_type, options = "free_form", _em_options(entry, where)
            else:
                options = dict(entry)
                if by_id:  # another type named by `id`, as the right-answers files are
                    options["name"] = str(options.pop("id"))
                question_type = options.pop("type", None)
                if question_type is None:
                    raise QuestionFileError(f"{where}: field 'type' is required")
            dataset = options.get("dataset")
            if isinstance(dataset, str) and not Path(dataset).is_absolute():
                options["dataset"] = str(file.parent / dataset)  # relative to the question file
            if str(name) in raw:
                raise QuestionFileError(
                    f"{where}: duplicate question name, first defined at {places[str(name)]}"
                )
            raw[str(name)] = {"type": question_type, **options}
            places[str(name)] = where
    questions: dict[str, Question] = {}
    for name, entry in raw.items():
        options = dict(entry)
        question_type = options.pop("type")
        judges = options["judges"] if isinstance(options.get("judges"), dict) else {}
        for judge_name, judge in [(n, j) for n, j in judges.items() if isinstance(j, str)]:
            if judge not in raw:  # llmcomp names another entry of the loaded files
                raise QuestionFileError(
                    f"{places[name]}: field 'judges.{judge_name}': no question named '{judge}' "
                    "in the loaded files"
                )
            judges[judge_name] = dict(raw[judge])
        try:
            questions[name] = Question.create(type=str(question_type), **options)
        except QuestionError as error:
            location = places[name].rsplit(": question", 1)[0]
            raise QuestionFileError(f"{location}: {error}") from None
    return questions
