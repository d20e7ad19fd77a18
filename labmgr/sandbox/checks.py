"""The sandbox's own inputs (its settings, the accounts and limits files, the bodies of
`/sandbox/faults` and `/sandbox/limits`) are pydantic models; `problem` turns the first thing
pydantic refused into one sentence naming where it is and the field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

STRICT = ConfigDict(strict=True, extra="forbid")
"""No coercion ("5" is not a number, true is not 1) and no unknown fields."""

_SHOULD = re.compile(r"^(?:Input|String|Value|Dictionary|List) should")
_INSTANCE = re.compile(r" or instance of \w+")


def problem(exc: ValidationError, where: str = "", model: type[BaseModel] | None = None) -> str:
    """``where: field must be …`` for the first error (every unknown field at once, with the
    known ones of `model`)."""
    errors = exc.errors(include_url=False)
    unknown = [".".join(map(str, e["loc"])) for e in errors if e["type"] == "extra_forbidden"]
    if unknown:
        text = f"unknown field(s) {', '.join(unknown)}"
        if model is not None:
            text += f"; known: {', '.join(model.model_fields)}"
    else:
        error = errors[0]
        loc = [str(part) for part in error["loc"]]
        if loc[-1:] == ["[key]"]:
            loc = [*loc[:-2], f"key {loc[-2]!r}"]
        if error["type"] == "missing":
            rule = "is required"
        elif error["type"] == "value_error":
            rule = str(error["ctx"]["error"])
        else:
            rule = _INSTANCE.sub("", _SHOULD.sub("must", error["msg"]))
            rule += f" (got {error['input']!r})"
        text = " ".join([".".join(loc), rule]).strip()
    return f"{where}: {text}" if where else text


def read(model: type[Any], data: Any, where: str, error: type[Exception]) -> Any:
    """`data` as `model`, or `error` with the sentence `problem` makes."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise error(problem(exc, where, model)) from None
