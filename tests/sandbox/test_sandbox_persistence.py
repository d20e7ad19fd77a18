"""`--state-dir`: files, jobs, batches and models survive a restart."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from fixtures.sandbox import training_jsonl, wait_for_batch, wait_for_job
from openai import OpenAI

from labmgr.sandbox import SandboxConfig, SandboxError, run_sandbox, serve_sandbox


def _client(base_url: str) -> OpenAI:
    return OpenAI(
        base_url=base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
    )


def test_files_jobs_and_models_survive_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    content = training_jsonl(10)
    with run_sandbox(state_dir=state, job_seconds=0.3) as sb:
        client = _client(sb.base_url)
        file_id = client.files.create(file=("t.jsonl", content), purpose="fine-tune").id
        job = client.fine_tuning.jobs.create(
            model="gpt-4o-mini", training_file=file_id, suffix="keep"
        )
        done = wait_for_job(client, job.id)
        client.files.delete(file_id)  # the finished model must not need its training file
    with run_sandbox(state_dir=state, job_seconds=5.0) as sb:
        client = _client(sb.base_url)
        again = client.fine_tuning.jobs.retrieve(job.id)
        assert again.status == "succeeded"
        assert again.fine_tuned_model == done.fine_tuned_model
        assert again.result_files == done.result_files
        results = client.files.content(done.result_files[0]).content
        assert base64.b64decode(results).startswith(b"step,")  # served base64, as the API does
        assert done.fine_tuned_model in {m.id for m in client.models.list()}
        answer = client.chat.completions.create(
            model=done.fine_tuned_model or "", messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.choices
        assert len(list(client.fine_tuning.jobs.checkpoints.list(job.id))) == 3


def test_a_job_keeps_running_across_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with run_sandbox(state_dir=state, job_seconds=1.0) as sb:
        client = _client(sb.base_url)
        file_id = client.files.create(file=("t.jsonl", training_jsonl()), purpose="fine-tune").id
        job = client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id)
    with run_sandbox(state_dir=state) as sb:
        client = _client(sb.base_url)
        assert client.files.retrieve(file_id).filename == "t.jsonl"
        assert wait_for_job(client, job.id).status == "succeeded"


def test_no_state_dir_means_a_fresh_start(tmp_path: Path) -> None:
    with run_sandbox() as sb:
        client = _client(sb.base_url)
        client.files.create(file=("t.jsonl", b"x"), purpose="user_data")
    with run_sandbox() as sb:
        assert _client(sb.base_url).files.list().data == []


def test_a_batch_keeps_running_across_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    lines = "".join(
        json.dumps(
            {
                "custom_id": f"r{i}",
                "method": "POST",
                "url": "/v1/chat/completions",
                "body": {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]},
            }
        )
        + "\n"
        for i in range(4)
    )
    with run_sandbox(state_dir=state, batch_seconds=1.5) as sb:
        client = _client(sb.base_url)
        file_id = client.files.create(file=("b.jsonl", lines.encode()), purpose="batch").id
        batch = client.batches.create(
            input_file_id=file_id, endpoint="/v1/chat/completions", completion_window="24h"
        )
    with run_sandbox(state_dir=state) as sb:
        client = _client(sb.base_url)
        done = wait_for_batch(client, batch.id)
        assert done.status == "completed" and done.request_counts is not None
        assert done.request_counts.completed == 4 and done.output_file_id
        outputs = client.files.content(done.output_file_id).text.splitlines()
        assert [json.loads(line)["custom_id"] for line in outputs] == ["r0", "r1", "r2", "r3"]


def test_a_state_file_from_another_version_is_refused_with_what_to_do(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "state.json").write_text('{"version": 1}')
    with pytest.raises(SandboxError, match="move it away"):
        serve_sandbox(SandboxConfig(state_dir=state), on_listening=lambda url: None)
