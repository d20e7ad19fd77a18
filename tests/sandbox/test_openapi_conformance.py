"""Every payload the sandbox serves, checked against OpenAI's published OpenAPI specification.

The spec (`shared/reference/openai-openapi.yaml.xz`, OpenAPI 3.1) is loaded once per session
and each payload is validated with `jsonschema` (Draft 2020-12, which OpenAPI 3.1 schemas
follow) against the component schema the spec names for that endpoint's answer.

Where the spec and the real API part ways, the test says so:
- The spec's own examples send `null` for a file's `status_details` and `expires_at`, a
  batch's `usage` before it settles and a checkpoint's `valid_*` metrics without a
  validation file, but its schemas type these without null: the sandbox leaves such a key
  out when there is nothing to say, which both accept.
- The spec still marks many fields `nullable: true` (OpenAPI 3.0's word, not JSON
  Schema's); `_json_schema` reads it as "or null".
- The spec has no schema for a batch's output and error lines; `BATCH_LINE` below is taken
  from the Batch API reference ("The request output object"), and each line's `body` is
  checked against the endpoint's own response schema (or `ErrorResponse`).
- `DELETE /v1/responses/{id}` has no documented body; the sandbox's is not checked here.
"""

from __future__ import annotations

import json
import lzma
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fixtures.sandbox import training_jsonl
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from labmgr.sandbox import SandboxHandle, run_sandbox

SPEC = Path("shared", "reference", "openai-openapi.yaml.xz")
"""Where the spec lies in the folder beside the repository (or above it)."""
SPEC_URI = "urn:openai-openapi"
KEY = {"Authorization": "Bearer sk-test"}

BATCH_LINE = {
    "type": "object",
    "required": ["id", "custom_id", "response", "error"],
    "additionalProperties": False,
    "properties": {
        "id": {"type": "string"},
        "custom_id": {"type": "string"},
        "response": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["status_code", "request_id", "body"],
                    "additionalProperties": False,
                    "properties": {
                        "status_code": {"type": "integer"},
                        "request_id": {"type": "string"},
                        "body": {"type": "object"},
                    },
                },
            ]
        },
        "error": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                },
            ]
        },
    },
}


def _spec_path() -> Path:
    for folder in Path(__file__).resolve().parents:
        if (folder / SPEC).exists():
            return folder / SPEC
    pytest.fail(f"OpenAI's OpenAPI specification ({SPEC}) is in no folder above the repository")


def _json_schema(node: Any) -> Any:
    """OpenAPI's leftover 3.0 `nullable: true` (the spec still uses it) as JSON Schema."""
    if isinstance(node, list):
        return [_json_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _json_schema(value) for key, value in node.items()}
    if out.pop("nullable", False) is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


@cache
def _spec() -> dict[str, Any]:
    """The parsed specification (about 87,000 lines of YAML: parsed once per session)."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    spec = yaml.load(lzma.decompress(_spec_path().read_bytes()), Loader=loader)
    spec["components"]["schemas"] = _json_schema(spec["components"]["schemas"])
    return dict(spec)


@cache
def _validator(component: str) -> Draft202012Validator:
    spec = _spec()
    assert component in spec["components"]["schemas"], component
    registry: Registry[Any] = Registry().with_resource(
        SPEC_URI, Resource.from_contents(spec, default_specification=DRAFT202012)
    )
    schema = {"$ref": f"{SPEC_URI}#/components/schemas/{component}"}
    return Draft202012Validator(schema, registry=registry)


def conforms(payload: Any, component: str) -> None:
    """Fail with every schema error when `payload` is not a valid `component`."""
    errors = sorted(_validator(component).iter_errors(payload), key=lambda e: list(e.path))
    assert not errors, f"{component}: " + "; ".join(
        f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message[:300]}" for e in errors
    )


def _event_schemas() -> dict[str, str]:
    """Responses stream event type → its component (the spec lists them under one anyOf)."""
    spec = _spec()["components"]["schemas"]
    out = {}
    for option in spec["ResponseStreamEvent"]["anyOf"]:
        name = option["$ref"].rsplit("/", 1)[1]
        kinds = spec[name].get("properties", {}).get("type", {}).get("enum", [])
        for kind in kinds:
            out[kind] = name
    return out


@pytest.fixture(scope="module")
def sb() -> Iterator[SandboxHandle]:
    with run_sandbox(job_seconds=0.6, batch_seconds=0.4) as handle:
        yield handle


@pytest.fixture(scope="module")
def http(sb: SandboxHandle) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sb.base_url, headers=KEY, trust_env=False, timeout=30) as client:
        yield client


def _ok(response: httpx.Response) -> Any:
    assert response.status_code == 200, response.text
    return response.json()


def _upload(http: httpx.Client, content: bytes, purpose: str, name: str = "data.jsonl") -> Any:
    return _ok(http.post("/files", data={"purpose": purpose}, files={"file": (name, content)}))


def _sse(response: httpx.Response) -> list[dict[str, Any]]:
    assert response.status_code == 200, response.text
    data = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in data if d != "[DONE]"]


def _wait(http: httpx.Client, path: str, done: tuple[str, ...]) -> Any:
    deadline = time.monotonic() + 20
    while True:
        body = _ok(http.get(path))
        if body["status"] in done or time.monotonic() > deadline:
            return body
        time.sleep(0.05)


def test_files_object_list_content_and_delete(http: httpx.Client) -> None:
    upload = _upload(http, training_jsonl(), "fine-tune")
    conforms(upload, "OpenAIFile")
    assert "status_details" not in upload and "expires_at" not in upload
    batch_file = _upload(http, b'{"x": 1}\n', "batch")
    conforms(batch_file, "OpenAIFile")
    assert batch_file["expires_at"] > batch_file["created_at"]
    conforms(_ok(http.get(f"/files/{upload['id']}")), "OpenAIFile")
    conforms(_ok(http.get("/files")), "ListFilesResponse")
    conforms(_ok(http.delete(f"/files/{batch_file['id']}")), "DeleteFileResponse")


def _finished_job(http: httpx.Client, **extra: Any) -> dict[str, Any]:
    training = _upload(http, training_jsonl(), "fine-tune")["id"]
    body = {"model": "gpt-4o-mini", "training_file": training, **extra}
    created = _ok(http.post("/fine_tuning/jobs", json=body))
    conforms(created, "FineTuningJob")
    path = f"/fine_tuning/jobs/{created['id']}"
    job = _wait(http, path, ("succeeded", "failed", "cancelled"))
    assert job["status"] == "succeeded", job
    conforms(job, "FineTuningJob")
    return job


@pytest.mark.parametrize("validation", [False, True], ids=["train-only", "with-validation"])
def test_fine_tuning_jobs_events_and_checkpoints(http: httpx.Client, validation: bool) -> None:
    extra = {}
    if validation:
        extra["validation_file"] = _upload(http, training_jsonl(3), "fine-tune")["id"]
    job = _finished_job(http, **extra)
    conforms(
        _ok(http.get("/fine_tuning/jobs", params={"limit": 5})),
        "ListPaginatedFineTuningJobsResponse",
    )
    events = _ok(http.get(f"/fine_tuning/jobs/{job['id']}/events", params={"limit": 100}))
    conforms(events, "ListFineTuningJobEventsResponse")
    assert {e["type"] for e in events["data"]} == {"message", "metrics"}
    checkpoints = _ok(http.get(f"/fine_tuning/jobs/{job['id']}/checkpoints"))
    conforms(checkpoints, "ListFineTuningJobCheckpointsResponse")
    metrics = checkpoints["data"][0]["metrics"]
    assert ("valid_loss" in metrics) is validation
    assert "train_loss" in metrics


def test_job_actions_and_a_failed_job(http: httpx.Client) -> None:
    training = _upload(http, training_jsonl(), "fine-tune")["id"]
    created = _ok(
        http.post("/fine_tuning/jobs", json={"model": "gpt-4o-mini", "training_file": training})
    )
    cancelled = _ok(http.post(f"/fine_tuning/jobs/{created['id']}/cancel"))
    conforms(cancelled, "FineTuningJob")
    bad = _upload(http, b'{"messages": []}\n' * 10, "fine-tune")["id"]
    created = _ok(
        http.post("/fine_tuning/jobs", json={"model": "gpt-4o-mini", "training_file": bad})
    )
    failed = _wait(http, f"/fine_tuning/jobs/{created['id']}", ("failed",))
    assert failed["status"] == "failed"
    conforms(failed, "FineTuningJob")


def test_models_list_retrieve_and_delete(http: httpx.Client) -> None:
    job = _finished_job(http, suffix="conformance")
    listed = _ok(http.get("/models"))
    conforms(listed, "ListModelsResponse")
    assert job["fine_tuned_model"] in {m["id"] for m in listed["data"]}
    conforms(_ok(http.get("/models/gpt-4.1-mini")), "Model")
    conforms(_ok(http.get(f"/models/{job['fine_tuned_model']}")), "Model")
    conforms(_ok(http.delete(f"/models/{job['fine_tuned_model']}")), "DeleteModelResponse")


CHAT = {
    "model": "gpt-4.1-mini",
    "messages": [{"role": "user", "content": "Is water wet? Answer yes or no."}],
}


@pytest.mark.parametrize(
    "extra",
    [{}, {"logprobs": True, "top_logprobs": 3, "n": 2}, {"max_tokens": 3}, {"model": "o4-mini"}],
    ids=["plain", "logprobs", "cut", "reasoning"],
)
def test_chat_completions_and_their_stream_chunks(
    http: httpx.Client, extra: dict[str, Any]
) -> None:
    body = {**CHAT, **extra}
    conforms(_ok(http.post("/chat/completions", json=body)), "CreateChatCompletionResponse")
    stream = {**body, "stream": True, "stream_options": {"include_usage": True}}
    chunks = _sse(http.post("/chat/completions", json=stream))
    assert chunks[-1]["usage"]["total_tokens"] > 0
    for chunk in chunks:
        conforms(chunk, "CreateChatCompletionStreamResponse")


def test_legacy_completions(http: httpx.Client) -> None:
    body = {
        "model": "davinci-002",
        "prompt": ["Once upon", "a time"],
        "logprobs": 2,
        "max_tokens": 5,
    }
    conforms(_ok(http.post("/completions", json=body)), "CreateCompletionResponse")


def _batch_input(lines: list[dict[str, Any]], url: str) -> bytes:
    return "".join(
        json.dumps({"custom_id": f"r{i}", "method": "POST", "url": url, "body": body}) + "\n"
        for i, body in enumerate(lines)
    ).encode()


@pytest.mark.parametrize(
    ("url", "body", "component"),
    [
        ("/v1/chat/completions", CHAT, "CreateChatCompletionResponse"),
        ("/v1/responses", {"model": "gpt-4.1-mini", "input": "Say hi."}, "Response"),
    ],
    ids=["chat", "responses"],
)
def test_batches_and_their_output_lines(
    http: httpx.Client, url: str, body: dict[str, Any], component: str
) -> None:
    lines = [body, body, {**body, "model": "gpt-4.1-mini", "temperature": 9}]
    file_id = _upload(http, _batch_input(lines, url), "batch", "batch.jsonl")["id"]
    created = _ok(
        http.post(
            "/batches", json={"input_file_id": file_id, "endpoint": url, "completion_window": "24h"}
        )
    )
    conforms(created, "Batch")
    assert "usage" not in created  # not settled yet: nothing to say
    batch = _wait(http, f"/batches/{created['id']}", ("completed",))
    conforms(batch, "Batch")
    assert batch["usage"]["input_tokens"] > 0
    conforms(_ok(http.get("/batches", params={"limit": 3})), "ListBatchesResponse")
    output = _ok(http.get(f"/files/{batch['output_file_id']}"))
    conforms(output, "OpenAIFile")
    for file_id, schema in (
        (batch["output_file_id"], component),
        (batch["error_file_id"], "ErrorResponse"),
    ):
        text = http.get(f"/files/{file_id}/content").text
        for raw in text.splitlines():
            line = json.loads(raw)
            Draft202012Validator(BATCH_LINE).validate(line)
            conforms(line["response"]["body"], schema)


def test_failed_and_cancelled_batches(http: httpx.Client) -> None:
    file_id = _upload(http, b"not json\n", "batch", "bad.jsonl")["id"]
    body = {
        "input_file_id": file_id,
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
    }
    failed = _wait(http, f"/batches/{_ok(http.post('/batches', json=body))['id']}", ("failed",))
    conforms(failed, "Batch")
    file_id = _upload(http, _batch_input([CHAT] * 3, "/v1/chat/completions"), "batch")["id"]
    body["input_file_id"] = file_id
    created = _ok(http.post("/batches", json=body))
    conforms(_ok(http.post(f"/batches/{created['id']}/cancel")), "Batch")
    cancelled = _wait(http, f"/batches/{created['id']}", ("cancelled",))
    conforms(cancelled, "Batch")
    for raw in http.get(f"/files/{cancelled['error_file_id']}/content").text.splitlines():
        Draft202012Validator(BATCH_LINE).validate(json.loads(raw))


RESPONSES = [
    {"model": "gpt-4.1-mini", "input": "Name a fruit.", "instructions": "Be brief."},
    {
        "model": "gpt-4.1-mini",
        "input": "Is water wet?",
        "include": ["message.output_text.logprobs"],
        "top_logprobs": 2,
    },
    {"model": "gpt-4.1-mini", "input": "Tell me about the sea.", "max_output_tokens": 16},
    {
        "model": "o4-mini",
        "input": "Why is the sky blue?",
        "reasoning": {"summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    },
    {"model": "o4-mini", "input": "Why is the sky blue?", "max_output_tokens": 16},
    {
        "model": "gpt-4.1-mini",
        "input": "Give JSON.",
        "text": {
            "format": {
                "type": "json_schema",
                "name": "a",
                "schema": {"type": "object", "properties": {"a": {"type": "string"}}},
            }
        },
    },
]


@pytest.mark.parametrize(
    "body", RESPONSES, ids=["plain", "logprobs", "cut", "summary", "reasoning-cut", "json"]
)
def test_responses_and_their_stream_events(http: httpx.Client, body: dict[str, Any]) -> None:
    response = _ok(http.post("/responses", json=body))
    conforms(response, "Response")
    conforms(_ok(http.get(f"/responses/{response['id']}")), "Response")
    conforms(_ok(http.get(f"/responses/{response['id']}/input_items")), "ResponseItemList")
    schemas = _event_schemas()
    events = _sse(http.post("/responses", json={**body, "stream": True}))
    assert events[-1]["type"] in ("response.completed", "response.incomplete")
    for event in events:
        conforms(event, schemas[event["type"]])
        conforms(event, "ResponseStreamEvent")


def test_responses_token_counts(http: httpx.Client) -> None:
    body = {"model": "gpt-4.1-mini", "input": "Count me."}
    conforms(_ok(http.post("/responses/input_tokens", json=body)), "TokenCountsResource")


@pytest.mark.parametrize(
    ("method", "path", "body", "status"),
    [
        ("POST", "/chat/completions", {"model": "gpt-4.1-mini"}, 400),
        ("POST", "/chat/completions", {**CHAT, "model": "gpt-nope"}, 404),
        ("GET", "/files/file-nope", None, 404),
        (
            "POST",
            "/responses",
            {"model": "gpt-4.1-mini", "input": "x", "tools": [{"type": "web_search"}]},
            400,
        ),
        ("GET", "/no/such/path", None, 404),
    ],
)
def test_errors(http: httpx.Client, method: str, path: str, body: Any, status: int) -> None:
    response = http.request(method, path, json=body)
    assert response.status_code == status
    conforms(response.json(), "ErrorResponse")


def test_auth_and_rate_limit_errors() -> None:
    limits = {"gpt-4.1-mini": {"rpm": 1}}
    with run_sandbox(limits=limits) as sb, httpx.Client(base_url=sb.base_url) as client:
        conforms(client.get("/models").json(), "ErrorResponse")
        client.post("/chat/completions", json=CHAT, headers=KEY)
        refused = client.post("/chat/completions", json=CHAT, headers=KEY)
        assert refused.status_code == 429
        conforms(refused.json(), "ErrorResponse")
