"""A run's chat requests go straight through the client's aiohttp session instead of the SDK's
request pipeline: they carry the headers the SDK sends, and every failure reads exactly as it
reads through the SDK (its own transport), status by status."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY

from evals import Cache, EnvRouter, Question, RunSettings

MODEL = "gpt-4o-mini"
ANSWERS: dict[str, tuple[int, bytes, dict[str, str]]] = {
    "bad request": (
        400,
        b'{"error": {"message": "Invalid value for temperature", "code": "invalid_value"}}',
        {},
    ),
    "no key": (401, b'{"error": {"message": "Incorrect API key provided", "code": null}}', {}),
    "no access": (403, b'{"error": {"message": "Project has no access"}}', {}),
    "no model": (404, b'{"error": {"message": "The model does not exist", "code": "x"}}', {}),
    "conflict": (409, b'{"error": {"message": "busy"}}', {}),
    "unprocessable": (422, b'{"detail": "cannot read the body"}', {}),
    "slow down": (
        429,
        b'{"error": {"message": "Rate limit reached for requests", "code": "rate_limit"}}',
        {"retry-after-ms": "5"},
    ),
    "no credit": (
        429,
        b'{"error": {"message": "You exceeded your quota", "type": "insufficient_quota"}}',
        {},
    ),
    "teapot": (418, b"I'm a teapot", {}),
    "broken": (502, b"<html>Bad gateway</html>", {}),
    "not json": (200, b"{half an answer", {}),
}


def _completion(model: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "blue"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
        }
    ).encode()


class _Server:
    """Answers each chat request by its prompt (`ANSWERS`, else a completion), records the
    headers of every chat request, and says every model exists."""

    def __init__(self) -> None:
        self.headers: list[dict[str, str]] = []
        recorded = self.headers

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def _send(self, status: int, body: bytes, extra: dict[str, str]) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in extra.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                model = self.path.rsplit("/", 1)[-1]
                self._send(200, json.dumps({"id": model, "object": "model"}).encode(), {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                recorded.append({k.lower(): v for k, v in self.headers.items()})
                prompt = body["messages"][-1]["content"]
                status, payload, extra = ANSWERS.get(prompt, (200, _completion(body["model"]), {}))
                self._send(status, payload, extra)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> _Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Server]:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    with _Server() as running:
        yield running


def _ask(server: _Server, folder: Path, transport: str, prompts: list[str]) -> Any:
    question = Question.create(
        type="free_form", name=f"posting-{transport}", paraphrases=prompts, max_tokens=5
    )
    settings = RunSettings(
        max_concurrency=4,
        max_attempts=1,
        request_timeout=5,
        progress=False,
        http_transport=transport,  # type: ignore[arg-type]
    )
    return question.df(
        {"g": [MODEL]},
        cache=Cache(folder / transport),
        router=EnvRouter(base_url=server.base_url),
        settings=settings,
    )


def _error(server: _Server, folder: Path, transport: str, prompt: str) -> str:
    """The error of a question of one prompt (alone: a failure of the model or the run
    would otherwise decide what happens to the other prompts)."""
    frame = _ask(server, folder / prompt.replace(" ", "-"), transport, [prompt])
    return str(frame["error"].iloc[0])


@pytest.mark.parametrize("prompt", list(ANSWERS))
def test_each_failure_reads_as_it_does_through_the_sdk(
    server: _Server, tmp_path: Path, prompt: str
) -> None:
    direct = _error(server, tmp_path, "aiohttp", prompt)
    assert direct == _error(server, tmp_path, "httpx", prompt)
    expected = {
        "bad request": "400 invalid_value: Invalid value for temperature",
        "no key": "model gpt-4o-mini failed: 401: Incorrect API key provided",
        "no access": "model gpt-4o-mini failed: 403: Project has no access",
        "no model": "model gpt-4o-mini failed: 404 x: The model does not exist",
        "conflict": "gave up after 1 attempts: 409: busy",
        "unprocessable": "422: Error code: 422",
        "slow down": "gave up after 1 attempts: 429 rate_limit: Rate limit reached for requests",
        "no credit": "run stopped: 429: You exceeded your quota",
        "teapot": "418: Error code: 418",
        "broken": "gave up after 1 attempts: 502: Error code: 502",
        "not json": "malformed response: JSONDecodeError",
    }[prompt]
    assert direct.startswith(expected), direct


def test_a_request_carries_the_headers_the_sdk_sends(server: _Server, tmp_path: Path) -> None:
    _ask(server, tmp_path, "aiohttp", ["Name a colour."])
    _ask(server, tmp_path, "httpx", ["Name a colour."])
    direct, through_sdk = server.headers
    assert direct["authorization"] == f"Bearer {TEST_KEY}"
    assert direct["user-agent"] == through_sdk["user-agent"]
    assert direct["content-type"] == "application/json"
    stainless = {k: v for k, v in through_sdk.items() if k.startswith("x-stainless")}
    assert stainless and {k: direct.get(k) for k in stainless} == stainless
