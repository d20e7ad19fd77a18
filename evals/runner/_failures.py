"""What a failed request means for the run: retry it, give up on its samples, give up on its
model, or stop the run."""

from __future__ import annotations

import email.utils
import time
from dataclasses import dataclass
from enum import StrEnum

import openai


class FailureKind(StrEnum):
    RETRY = "retry"
    """Transient: 429 rate limit, 5xx, 408/409, timeouts, dropped connections."""
    SAMPLE = "sample"
    """This request cannot succeed (content filter, context length, other 400s)."""
    MODEL = "model"
    """The model is unusable here (404 model not found, 401/403 no access)."""
    STOP = "stop"
    """Nothing more can succeed (insufficient quota)."""


@dataclass(frozen=True)
class Failure:
    kind: FailureKind
    message: str
    """Short and safe to show: status, error code and the server's message, never a key."""
    retry_after: float | None = None
    rate_limited: bool = False


def retry_after_seconds(headers: object) -> float | None:
    """Seconds asked for by `retry-after-ms` or `retry-after` (seconds or an HTTP date)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / divisor
        except ValueError:
            parsed = email.utils.parsedate_tz(value)
            if parsed is None:
                continue
            seconds = float(email.utils.mktime_tz(parsed) - time.time())
        if seconds >= 0 and seconds != float("inf"):
            return seconds
    return None


def classify(error: BaseException, *, base_url: str | None = None) -> Failure:
    """What an exception from a chat request means (naming `base_url` when unreachable)."""
    where = f" {base_url.rstrip('/')}" if base_url else ""
    if isinstance(error, openai.APITimeoutError):
        return Failure(FailureKind.RETRY, f"timeout: no answer from{where or ' the endpoint'}")
    if isinstance(error, openai.APIConnectionError):
        return Failure(
            FailureKind.RETRY, f"connection error: cannot reach{where or ' the endpoint'}"
        )
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        body = error.body if isinstance(error.body, dict) else {}
        code = str(body.get("code") or body.get("type") or "")
        named = body.get("code") or getattr(error, "code", None)
        text = str(body.get("message") or "").strip() or error.message
        message = f"{status}{f' {named}' if named else ''}: {text[:300]}"
        if status == 429:
            if "insufficient_quota" in (code, str(body.get("type") or "")):
                return Failure(FailureKind.STOP, message)
            if "Request too large" in message:  # waiting won't help
                return Failure(FailureKind.SAMPLE, message)
            return Failure(
                FailureKind.RETRY,
                message,
                retry_after=retry_after_seconds(error.response.headers),
                rate_limited=True,
            )
        if status >= 500 or status in (408, 409):
            return Failure(
                FailureKind.RETRY, message, retry_after=retry_after_seconds(error.response.headers)
            )
        if status in (401, 403, 404):
            return Failure(FailureKind.MODEL, message)
        return Failure(FailureKind.SAMPLE, message)
    if isinstance(error, ValueError | KeyError | TypeError):
        return Failure(FailureKind.SAMPLE, f"malformed response: {type(error).__name__}: {error}")
    return Failure(FailureKind.RETRY, f"{type(error).__name__}: {error}")
