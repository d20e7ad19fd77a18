"""Error responses shaped like the real OpenAI API's (`{"error": {message, type, param, code}}`)."""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "APIError",
    "SandboxError",
    "bad_request",
    "invalid_body",
    "model_not_found",
    "no_such_batch",
    "no_such_file",
    "no_such_job",
    "not_found",
    "quota_exhausted",
    "rate_limited",
    "server_error",
]


class SandboxError(Exception):
    """A sandbox that cannot start as asked (a bad setting or file); one sentence to show."""


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
        """The JSON body the real API sends for this error."""
        return {
            "error": {
                "message": self.message,
                "type": self.type,
                "param": self.param,
                "code": self.code,
            }
        }

    def body_bytes(self) -> bytes:
        return json.dumps(self.body()).encode()


def bad_request(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    """A 400 `invalid_request_error` (the SDK raises `BadRequestError`)."""
    return APIError(400, message, param=param, code=code)


def not_found(message: str, *, param: str | None = None, code: str | None = None) -> APIError:
    """A 404 `invalid_request_error` (the SDK raises `NotFoundError`)."""
    return APIError(404, message, param=param, code=code)


def model_not_found(model: str) -> APIError:
    """The real API's answer for a model that does not exist or is not yours."""
    return APIError(
        404,
        f"The model `{model}` does not exist or you do not have access to it.",
        param=None,
        code="model_not_found",
    )


def no_such_file(file_id: str) -> APIError:
    """The 404 for a file that does not exist or belongs to another project."""
    return not_found(f"No such File object: {file_id}", param="id")


def no_such_job(job_id: str) -> APIError:
    """The 404 for a fine-tuning job that does not exist or belongs to another project."""
    return not_found(f"Could not find fine-tuning job {job_id}.", param="fine_tuning_job_id")


def no_such_batch(batch_id: str) -> APIError:
    """The 404 for a batch that does not exist or belongs to another project."""
    return not_found(f"No batch found with id '{batch_id}'.", param="batch_id")


def invalid_body(message: str = "We could not parse the JSON body of your request.") -> APIError:
    """A 400 for a body that is not a JSON object."""
    return bad_request(
        message
        + " (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI"
        " API expects a JSON payload, but what was sent was not valid JSON.)",
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
    """An injected 500 with the real `server_error` body."""
    return APIError(
        500,
        "The server had an error while processing your request. Sorry about that!",
        type="server_error",
    )
