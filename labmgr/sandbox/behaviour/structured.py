"""Structured outputs: an answer rendered as JSON for ``response_format`` requests."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["render_json"]


def render_json(answer: str, number: int | None, schema: Mapping[str, Any] | None) -> str:
    """`answer` (and the number a rating prompt asked for) as a JSON document.

    Without a schema (``json_object``) the document is ``{"score": n}`` for ratings and
    ``{"answer": text}`` otherwise; with a schema every property is filled by its type.
    """
    if not isinstance(schema, Mapping) or not isinstance(schema.get("properties"), Mapping):
        return json.dumps({"score": number} if number is not None else {"answer": answer})
    return json.dumps(_fill(schema, answer, number, schema))


def _fill(schema: Any, answer: str, number: int | None, root: Mapping[str, Any]) -> Any:
    if not isinstance(schema, Mapping):
        return answer
    reference = schema.get("$ref")
    if isinstance(reference, str) and reference.startswith("#/"):
        target: Any = root
        for part in reference[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, Mapping) else {}
        return _fill(target, answer, number, root)
    for combinator in ("anyOf", "oneOf", "allOf"):
        options = schema.get(combinator)
        if isinstance(options, list) and options:
            return _fill(options[0], answer, number, root)
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return {}
        return {name: _fill(sub, answer, number, root) for name, sub in properties.items()}
    if kind == "array":
        return [_fill(schema.get("items", {}), answer, number, root)]
    if kind == "integer":
        return number if number is not None else 0
    if kind == "number":
        return float(number) if number is not None else 0.0
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    return answer
