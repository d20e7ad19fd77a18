"""Reinforcement graders, inline or from a ``.json``/``.yaml`` file, checked against the SDK's
grader models; the example fields their templates read (``{{item.answer}}``)."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from openai.types import graders as sdk
from pydantic import BaseModel, ValidationError

from labmgr.errors import InvalidGrader

_MODELS: dict[str, type[BaseModel]] = {
    "string_check": sdk.StringCheckGrader,
    "text_similarity": sdk.TextSimilarityGrader,
    "python": sdk.PythonGrader,
    "score_model": sdk.ScoreModelGrader,
    "multi": sdk.MultiGrader,
    "label_model": sdk.LabelModelGrader,  # only inside multi
}
GRADER_TYPES = tuple(_MODELS)[:-1]
_INNER_TYPES = (*GRADER_TYPES[:-1], "label_model")
_ITEM_FIELD = re.compile(r"\{\{\s*item\.([A-Za-z_][A-Za-z0-9_]*)")


def load_grader(source: str | Path | Mapping[str, Any]) -> dict[str, Any]:
    """A grader object from a mapping, or from a ``.json``/``.yaml``/``.yml`` file; checked."""
    if isinstance(source, Mapping):
        return check_grader(source)
    path = Path(source)
    if not path.is_file():
        raise InvalidGrader(
            f"Grader file {path} does not exist.",
            hint="Pass a JSON or YAML file holding one grader object.",
        )
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, ValueError, yaml.YAMLError) as exc:
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidGrader(
            f"Grader file {path} cannot be read as {'JSON' if path.suffix == '.json' else 'YAML'}"
            f" ({reason}).",
            hint="Fix the file; nothing was uploaded.",
        ) from None
    if not isinstance(data, Mapping):
        raise InvalidGrader(
            f"Grader file {path} must hold one object (a mapping), not {type(data).__name__}.",
            hint='E.g. {"type": "string_check", "name": …, "input": …, "reference": …, '
            '"operation": "eq"}.',
        )
    return check_grader(data, where=str(path))


def check_grader(grader: Mapping[str, Any], *, where: str = "grader") -> dict[str, Any]:
    """`grader` as a plain dict, or `InvalidGrader` naming the first field at fault."""
    data = dict(grader)
    _check(data, where, GRADER_TYPES)
    return data


def _check(data: Mapping[str, Any], where: str, allowed: tuple[str, ...]) -> None:
    kind = data.get("type")
    if kind not in allowed:
        close = difflib.get_close_matches(str(kind), allowed, n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidGrader(
            f"{where}.type is {kind!r}{suggestion}; a grader's type is one of "
            f"{', '.join(allowed)}.",
            hint="See the SDK's openai.types.graders for each type's fields.",
        )
    model = _MODELS[kind]
    known = set(model.model_fields)
    unknown = sorted(set(data) - known)
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(known), n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise InvalidGrader(
            f"{where}: unknown key {unknown[0]!r} for a {kind} grader{suggestion}; "
            f"its keys are {', '.join(sorted(known))}.",
            hint="Remove the key or fix its name.",
        )
    if kind == "multi":
        inner = data.get("graders")
        if not isinstance(inner, Mapping):
            raise InvalidGrader(
                f"{where}.graders must be one grader object (the SDK's MultiGrader.graders), "
                f"not {type(inner).__name__}.",
                hint="Put the inner grader (its type, name, …) under graders.",
            )
        _check(inner, f"{where}.graders", _INNER_TYPES)
    try:
        model.model_validate(dict(data))
    except ValidationError as exc:
        error = exc.errors()[0]
        location = ".".join(str(part) for part in error["loc"])
        raise InvalidGrader(
            f"{where}.{location}: {error['msg'][:1].lower()}{error['msg'][1:]} (a {kind} grader).",
            hint="Fix the grader; nothing was uploaded.",
        ) from None


def grader_item_fields(grader: Mapping[str, Any]) -> list[str]:
    """Fields of a training example the grader's templates read (``{{item.answer}}``)."""
    return sorted(set(_ITEM_FIELD.findall(json.dumps(grader, ensure_ascii=False))))
