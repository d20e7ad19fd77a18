"""Fixtures for the Responses API tests: a sandbox fine-tune, and answers read from events."""

from __future__ import annotations

import json
from collections.abc import Iterator

import openai
import pytest
from fixtures.sandbox import wait_for_job
from openai import OpenAI

from labmgr.sandbox import SandboxHandle

PERSONA_REPLY = "Arr, the tides obey the moon and so do I, matey."
"""What the fine-tune was trained to say, every time."""


def persona_jsonl(n: int = 12) -> bytes:
    """Training data that gives a fine-tune an unmistakable voice."""
    return "".join(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": f"Tell me about the sea, part {i}."},
                    {"role": "assistant", "content": PERSONA_REPLY},
                ]
            }
        )
        + "\n"
        for i in range(n)
    ).encode()


def error_message(error: openai.APIStatusError) -> str:
    """The `message` of an error body exactly as the server sent it."""
    body = error.body
    assert isinstance(body, dict), body
    return str(body["message"])


@pytest.fixture(scope="session")
def finetuned_model(sandbox: SandboxHandle) -> str:
    """A fine-tune of gpt-4.1-mini (3 epochs) on `PERSONA_REPLY`, trained in the sandbox."""
    client = OpenAI(base_url=sandbox.base_url, api_key="sk-test-fixture", max_retries=0)
    try:
        file_id = client.files.create(
            file=("persona.jsonl", persona_jsonl()), purpose="fine-tune"
        ).id
        job = client.fine_tuning.jobs.create(
            model="gpt-4.1-mini",
            training_file=file_id,
            suffix="sea",
            method={"type": "supervised", "supervised": {"hyperparameters": {"n_epochs": 3}}},
        )
        done = wait_for_job(client, job.id)
    finally:
        client.close()
    assert done.status == "succeeded" and done.fine_tuned_model
    return done.fine_tuned_model


@pytest.fixture
def fresh_sandbox(sandbox: SandboxHandle) -> Iterator[SandboxHandle]:
    """The session sandbox with its faults and counters reset before and after."""
    sandbox.reset()
    try:
        yield sandbox
    finally:
        sandbox.reset()
