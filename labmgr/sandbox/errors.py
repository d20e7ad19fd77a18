"""Errors shaped like the real OpenAI API's (`{"error": {message, type, param, code}}`), and
the sandbox's own: its inputs (its settings, the accounts and limits files, the bodies of
`/sandbox/faults` and `/sandbox/limits`) are pydantic models, and `problem` turns the first
thing pydantic refused into one sentence naming where it is and the field."""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError


class SandboxError(Exception):
    """A sandbox that cannot start as asked (a bad setting or file); one sentence to show."""


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


class APIError(Exception):
    """An error the sandbox answers with: HTTP status, OpenAI-shaped body, extra headers."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.param = param
        self.code = code
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        error = {"message": self.message, "type": self.type, "param": self.param}
        return {"error": {**error, "code": self.code}}


def bad_request(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    return APIError(400, message, param=param, code=code)


def model_not_found(model: str) -> APIError:
    message = f"The model `{model}` does not exist or you do not have access to it."
    return APIError(404, message, code="model_not_found")


def missing_parameter(param: str) -> APIError:
    message = f"Missing required parameter: '{param}'."
    return bad_request(message, param=param, code="missing_required_parameter")


def quoted(values: tuple[str, ...]) -> str:
    quoted = [f"'{v}'" for v in values]
    return ", ".join(quoted[:-1]) + f", and {quoted[-1]}" if len(quoted) > 1 else quoted[0]


def invalid_value(value: Any, allowed: tuple[str, ...], param: str) -> APIError:
    message = f"Invalid value: '{value}'. Supported values are: {quoted(allowed)}."
    return bad_request(message, param=param, code="invalid_value")


def wrong_type(param: str, expected: str, value: Any) -> APIError:
    kinds = ((bool, "boolean"), (str, "string"), (int, "integer"), (float, "number"))
    got = next((name for kind, name in kinds if isinstance(value, kind)), None)
    got = got or ("null" if value is None else "array" if isinstance(value, list) else "object")
    message = f"Invalid type for '{param}': expected {expected}, but got {got} instead."
    return bad_request(message, param=param, code="invalid_type")


def unsupported_parameter(param: str) -> APIError:
    message = f"Unsupported parameter: '{param}' is not supported with this model."
    return bad_request(message, param=param, code="unsupported_parameter")


def number_param(
    body: Any, param: str, low: float, high: float | None, *, integer: bool = True
) -> Any:
    """`body[param]` checked as an integer (or a decimal) in [low, high]; None when absent."""
    value = body.get(param)
    if value is None:
        return None
    kind = "integer" if integer else "decimal"
    if isinstance(value, float) and integer and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int if integer else int | float):
        raise wrong_type(param, "an integer" if integer else "a decimal", value)
    if value < low:
        side, bound, code = "below minimum", f">= {low}", "below_min"
    elif high is not None and value > high:
        side, bound, code = "above maximum", f"<= {high}", "above_max"
    else:
        return value
    message = f"Invalid '{param}': {kind} {side} value. Expected a value {bound}, but got {value}"
    raise bad_request(f"{message} instead.", param=param, code=f"{kind}_{code}_value")


def metadata_param(body: Any) -> dict[str, str] | None:
    """`body["metadata"]`: at most 16 string pairs, keys up to 64 and values up to 512."""
    value = body.get("metadata")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise wrong_type("metadata", "an object", value)
    if len(value) > 16:
        message = (
            "Invalid 'metadata': too many properties. Expected an object with at most 16 "
            f"properties, but got {len(value)} instead."
        )
        raise bad_request(message, param="metadata", code="object_above_max_properties")
    for key, item in value.items():
        if len(key) > 64:
            message = f"Invalid 'metadata': key '{key[:20]}…' is longer than 64 characters."
            raise bad_request(message, param="metadata", code="invalid_value")
        if not isinstance(item, str):
            raise wrong_type(f"metadata.{key}", "a string", item)
        if len(item) > 512:
            message = (
                f"Invalid 'metadata.{key}': string too long. Expected a string with maximum "
                f"length 512, but got a string with length {len(item)} instead."
            )
            raise bad_request(message, param=f"metadata.{key}", code="string_above_max_length")
    return dict(value)


def invalid_body(message: str = "We could not parse the JSON body of your request.") -> APIError:
    return bad_request(
        message
        + " (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI"
        " API expects a JSON payload, but what was sent was not valid JSON.)"
    )


def rate_limited(retry_after_ms: float) -> APIError:
    """An injected 429 with the real body and a short `retry-after-ms` hint."""
    return APIError(
        429,
        "Rate limit reached for requests in organization on requests per min (RPM). "
        "Please try again shortly.",
        type="requests",
        code="rate_limit_exceeded",
        headers={"retry-after-ms": f"{retry_after_ms:g}"},
    )


def quota_exhausted() -> APIError:
    """The 429 of an organization out of credits (not worth retrying)."""
    return APIError(
        429,
        "You exceeded your current quota, please check your plan and billing details.",
        type="insufficient_quota",
        code="insufficient_quota",
    )


def server_error() -> APIError:
    message = "The server had an error while processing your request. Sorry about that!"
    return APIError(500, message, type="server_error")
