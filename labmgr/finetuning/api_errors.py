"""The text of an API error, safe to show: any key-shaped string is removed."""

from __future__ import annotations

import re

import openai

__all__ = ["api_message"]

_KEYISH = re.compile(r"(sk|rk|pk)-[A-Za-z0-9_*\-]{3,}")


def api_message(exc: openai.APIError) -> str:
    """The API's own message of `exc` with anything that looks like a key replaced."""
    body = exc.body if isinstance(exc.body, dict) else None
    message = body.get("message") if body else None
    text = message if isinstance(message, str) and message else exc.message
    return _KEYISH.sub("<key>", str(text))
