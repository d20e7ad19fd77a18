"""An Inspect evaluation runs offline against the sandbox: a chat model, a reasoning model
(which Inspect sends through the Responses API) and a sandbox fine-tune."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import includes
from inspect_ai.solver import generate

from labmgr.sandbox import SandboxHandle

LOOPBACK = ("127.0.0.1", "localhost", "::1")
SAMPLES = [
    Sample(input="Is water wet? Answer yes or no.", target="yes"),
    Sample(input="What colour is a clear daytime sky?", target="blue"),
    Sample(input="Tell me about the sea, part 7.", target="sea"),
]


@pytest.fixture
def outside_calls(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """Every attempt to reach a host other than this machine (each one refused), with
    Inspect's environment kept in `tmp_path`."""
    attempts: list[Any] = []
    connect, resolve = socket.socket.connect, socket.getaddrinfo

    def guarded_connect(sock: socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in LOOPBACK:
            attempts.append(address)
            raise OSError(f"no network in tests: {address}")
        connect(sock, address)

    def guarded_resolve(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOOPBACK and host not in (None, b"127.0.0.1"):
            attempts.append(host)
            raise socket.gaierror(f"no network in tests: {host}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", guarded_connect)
    monkeypatch.setattr(socket, "getaddrinfo", guarded_resolve)
    monkeypatch.chdir(tmp_path)  # no .env of the repository's or the user's
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-inspect")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return attempts


def _evaluate(
    sandbox: SandboxHandle, model: str, tmp_path: Path, **model_args: Any
) -> tuple[list[str], dict[str, Any]]:
    """Run the three-sample task on `model`; its completions and Inspect's usage record."""
    [log] = inspect_eval(
        Task(dataset=SAMPLES, solver=generate(), scorer=includes()),
        model=model,
        model_base_url=sandbox.base_url,
        model_args=model_args,
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_retries=0,
        temperature=0,  # answers in a fine-tune's voice for sure (Inspect drops it for gpt-5)
    )
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == len(SAMPLES)
    assert log.results is not None and log.results.scores  # every sample was scored
    return [s.output.completion for s in log.samples], log.stats.model_usage


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The 'initial' parameter is deprecated:DeprecationWarning")
def test_inspect_evaluates_chat_reasoning_and_finetuned_models_offline(
    fresh_sandbox: SandboxHandle,
    finetuned_model: str,
    outside_calls: list[Any],
    tmp_path: Path,
) -> None:
    chat, chat_usage = _evaluate(fresh_sandbox, "openai/gpt-4.1-mini", tmp_path)
    reasoning, reasoning_usage = _evaluate(fresh_sandbox, "openai/gpt-5-mini", tmp_path)
    tuned, _ = _evaluate(fresh_sandbox, f"openai/{finetuned_model}", tmp_path)
    tuned_responses, _ = _evaluate(
        fresh_sandbox, f"openai/{finetuned_model}", tmp_path, responses_api=True
    )

    assert outside_calls == []
    assert all(chat) and all(reasoning) and all(tuned) and all(tuned_responses)
    assert chat_usage["openai/gpt-4.1-mini"].reasoning_tokens == 0
    assert (reasoning_usage["openai/gpt-5-mini"].reasoning_tokens or 0) > 0
    assert "moon" in tuned[2] and "moon" not in chat[2]  # the fine-tune's voice comes through
    assert "moon" in tuned_responses[2]
    models = fresh_sandbox.stats()["models"]
    assert models["gpt-4.1-mini"]["endpoints"] == {"chat.completions": 3}
    assert models["gpt-5-mini"]["endpoints"]["responses.create"] >= 3
    assert models[finetuned_model]["endpoints"] == {
        "chat.completions": 3,
        "responses.create": 3,
    }
