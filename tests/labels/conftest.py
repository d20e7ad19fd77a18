"""Fixtures for labelling tests: a judged run folder (hostile answers included) and a label
server running in a thread of the test, talked to over loopback HTTP."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fixtures.report import ANSWERS, judged_frame

from evals.labels import LabelServer, start_label_server
from evals.runs import write_run

HOSTILE_ANSWERS = [
    "<script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
]
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A judged run of 2 groups × 3 models × 2 prompts × 4 samples (24 answers)."""
    frame = judged_frame(
        {"control": ["ft:m:c:1", "ft:m:c:2"], "treated": ["ft:m:t:1"]},
        samples=4,
        means={"control": 70, "treated": 30},
        answers=[*HOSTILE_ANSWERS, *ANSWERS],
        spread=25,
    )
    return write_run(tmp_path / "run", {"wish": frame}, resamples=50).path


@contextmanager
def serving(run: Path, **options: Any) -> Iterator[LabelServer]:
    """A label server of `run` answering in a thread until the block ends."""
    server = start_label_server(run, **options)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def call(url: str, body: Any = None, *, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """GET `url`, or POST `body` as JSON; the status and the decoded JSON reply."""
    data = None if body is None else json.dumps(body).encode("utf-8")
    sent = {"Content-Type": "application/json"} if body is not None else {}
    request = urllib.request.Request(url, data=data, headers={**sent, **(headers or {})})
    try:
        with _DIRECT.open(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def label(server: LabelServer, sample: str, value: float | None, event: str = "label") -> Any:
    status, reply = call(server.url + "api/label", {"id": sample, "event": event, "value": value})
    assert status == 200, reply
    return reply


def log_events(run: Path, labeller: str) -> list[dict[str, Any]]:
    path = run / "labels" / f"{labeller}.jsonl"
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


__all__ = ["HOSTILE_ANSWERS", "call", "label", "log_events", "serving"]
