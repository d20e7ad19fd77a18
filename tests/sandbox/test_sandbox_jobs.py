"""Fine-tuning jobs: lifecycle, events, checkpoints, failures, pause/resume/cancel, listing."""

from __future__ import annotations

import json
import re
import time

import openai
import pytest
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI

from labmgr.sandbox import run_sandbox

FT_ID = re.compile(r"^ft:gpt-4o-mini-2024-07-18:sandbox:(?P<suffix>[^:]*):[A-Za-z0-9]{8}$")


def _upload(client: OpenAI, content: bytes, name: str = "train.jsonl") -> str:
    return client.files.create(file=(name, content), purpose="fine-tune").id


def test_job_runs_to_success_with_model_checkpoints_and_events(sandbox_client: OpenAI) -> None:
    file_id = _upload(sandbox_client, training_jsonl(12))
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=file_id, suffix="pirate", seed=None
    )
    assert job.status == "validating_files"
    assert job.model == "gpt-4o-mini-2024-07-18"
    assert job.fine_tuned_model is None and job.trained_tokens is None
    assert isinstance(job.seed, int)

    done = wait_for_job(sandbox_client, job.id)
    assert done.status == "succeeded"
    assert done.fine_tuned_model and FT_ID.match(done.fine_tuned_model).group("suffix") == "pirate"
    assert done.finished_at is not None and done.estimated_finish is None
    assert done.trained_tokens and done.trained_tokens > 0
    hp = done.hyperparameters
    assert all(
        isinstance(v, int | float)
        for v in (hp.n_epochs, hp.batch_size, hp.learning_rate_multiplier)
    )
    assert len(done.result_files) == 1
    assert sandbox_client.files.retrieve(done.result_files[0]).purpose == "fine-tune-results"

    checkpoints = list(sandbox_client.fine_tuning.jobs.checkpoints.list(job.id))
    assert len(checkpoints) == 3
    assert checkpoints[0].fine_tuned_model_checkpoint == done.fine_tuned_model
    steps = [c.step_number for c in checkpoints]
    assert steps == sorted(steps, reverse=True)
    for checkpoint in checkpoints[1:]:
        name = checkpoint.fine_tuned_model_checkpoint
        assert name.endswith(f":ckpt-step-{checkpoint.step_number}")
        assert name.split(":")[4] != done.fine_tuned_model.split(":")[4]

    messages = [e.message for e in sandbox_client.fine_tuning.jobs.list_events(job.id, limit=100)]
    assert messages[0] == "The job has successfully completed"
    assert messages[-1] == f"Created fine-tuning job: {job.id}"
    assert any("usage policies" in m for m in messages)
    assert any(m.startswith("Step 1/") for m in messages)
    metrics = [
        e
        for e in sandbox_client.fine_tuning.jobs.list_events(job.id, limit=100)
        if e.type == "metrics"
    ]
    assert metrics and "train_loss" in metrics[0].data  # type: ignore[operator]

    for model in [done.fine_tuned_model] + [c.fine_tuned_model_checkpoint for c in checkpoints]:
        answer = sandbox_client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "Hi"}]
        )
        assert answer.model == model
    listed = {m.id for m in sandbox_client.models.list()}
    assert done.fine_tuned_model in listed


def test_events_page_backwards_with_after(sandbox_client: OpenAI) -> None:
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=_upload(sandbox_client, training_jsonl(10))
    )
    wait_for_job(sandbox_client, job.id)
    everything = list(sandbox_client.fine_tuning.jobs.list_events(job.id, limit=100))
    first = sandbox_client.fine_tuning.jobs.list_events(job.id, limit=3)
    second = sandbox_client.fine_tuning.jobs.list_events(job.id, limit=3, after=first.data[-1].id)
    assert [e.id for e in first.data + second.data] == [e.id for e in everything[:6]]
    assert [e.id for e in sandbox_client.fine_tuning.jobs.list_events(job.id, limit=7)] == [
        e.id for e in everything
    ]


def _example(**first_message: object) -> bytes:
    """One chat example whose first message has `first_message`'s fields."""
    messages = [{"role": "user", "content": "hi", **first_message}]
    messages.append({"role": "assistant", "content": "hello"})
    return json.dumps({"messages": messages}).encode() + b"\n"


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (training_jsonl(5), "at least 10 examples"),
        (training_jsonl(11) + b"{not json\n", "Line 12 is not valid JSON"),
        (training_jsonl(10) + json.dumps({"prompt": "x"}).encode() + b"\n", "Line 11 is missing"),
        (training_jsonl(10) + _example(role=["user"]), "Line 11, messages[0] has an invalid role"),
        (training_jsonl(10) + _example(content={"text": "hi"}), "`content` must be a string"),
    ],
    ids=["too few", "not json", "no messages", "role a list", "content an object"],
)
def test_invalid_training_file_fails_the_job(
    sandbox_client: OpenAI, content: bytes, fragment: str
) -> None:
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=_upload(sandbox_client, content)
    )
    done = wait_for_job(sandbox_client, job.id)
    assert done.status == "failed"
    assert done.error is not None and done.error.param == "training_file"
    assert done.error.code == "invalid_training_file"
    assert fragment in done.error.message
    assert done.fine_tuned_model is None


def test_unknown_or_untunable_base_model_is_400(sandbox_client: OpenAI) -> None:
    file_id = _upload(sandbox_client, training_jsonl())
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.fine_tuning.jobs.create(model="gpt-unknown", training_file=file_id)
    assert info.value.param == "model"
    assert "not available for fine-tuning" in info.value.message


def test_training_file_of_wrong_purpose_is_400(sandbox_client: OpenAI) -> None:
    file_id = sandbox_client.files.create(file=("b.jsonl", training_jsonl()), purpose="batch").id
    with pytest.raises(openai.BadRequestError) as info:
        sandbox_client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id)
    assert info.value.param == "training_file"


def test_cancelling_a_finished_job_is_400(sandbox_client: OpenAI) -> None:
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=_upload(sandbox_client, training_jsonl())
    )
    wait_for_job(sandbox_client, job.id)
    with pytest.raises(openai.BadRequestError):
        sandbox_client.fine_tuning.jobs.cancel(job.id)


def test_cancel_stops_a_running_job(sandbox_client: OpenAI) -> None:
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=_upload(sandbox_client, training_jsonl())
    )
    cancelled = sandbox_client.fine_tuning.jobs.cancel(job.id)
    assert cancelled.status == "cancelled"
    assert wait_for_job(sandbox_client, job.id).status == "cancelled"
    assert wait_for_job(sandbox_client, job.id).fine_tuned_model is None


def test_pause_then_resume() -> None:
    # `paused` is outside the SDK's status Literal, so a lenient client reads it.
    with run_sandbox(job_seconds=8.0) as slow:
        client = OpenAI(base_url=slow.base_url, api_key="sk-test", max_retries=0)
        strict = OpenAI(
            base_url=slow.base_url,
            api_key="sk-test",
            max_retries=0,
            _strict_response_validation=True,
        )
        job = client.fine_tuning.jobs.create(
            model="gpt-4o-mini", training_file=_upload(client, training_jsonl())
        )
        with pytest.raises(openai.BadRequestError):
            client.fine_tuning.jobs.resume(job.id)  # not paused
        with pytest.raises(openai.BadRequestError):
            client.fine_tuning.jobs.pause(job.id)  # still validating files
        deadline = time.monotonic() + 10
        while client.fine_tuning.jobs.retrieve(job.id).status == "validating_files":
            assert time.monotonic() < deadline
            time.sleep(0.05)
        paused = client.fine_tuning.jobs.pause(job.id)
        assert paused.status == "paused"
        assert client.fine_tuning.jobs.retrieve(job.id).status == "paused"
        with pytest.raises(openai.APIResponseValidationError):
            strict.fine_tuning.jobs.retrieve(job.id)
        resumed = strict.fine_tuning.jobs.resume(job.id)
        assert resumed.status == "queued"
        messages = [e.message for e in client.fine_tuning.jobs.list_events(job.id, limit=3)]
        assert messages[:2] == ["Fine-tuning job resumed", "Fine-tuning job paused"]
        assert client.fine_tuning.jobs.cancel(job.id).status == "cancelled"


def test_list_filters_by_metadata_and_paginates(sandbox_client: OpenAI) -> None:
    file_id = _upload(sandbox_client, training_jsonl())
    tagged = [
        sandbox_client.fine_tuning.jobs.create(
            model="gpt-4o-mini", training_file=file_id, metadata={"run": "listing", "i": str(i)}
        ).id
        for i in range(3)
    ]
    page = sandbox_client.fine_tuning.jobs.list(limit=2, metadata={"run": "listing"})
    assert [j.id for j in page.data] == tagged[::-1][:2] and page.has_more
    assert [
        j.id for j in sandbox_client.fine_tuning.jobs.list(limit=2, metadata={"run": "listing"})
    ] == tagged[::-1]
    only = sandbox_client.fine_tuning.jobs.list(metadata={"run": "listing", "i": "1"}).data
    assert [j.id for j in only] == [tagged[1]]


def test_daily_job_limit_answers_429_with_openai_wording() -> None:
    with run_sandbox() as sb:
        sb.set_faults(daily_job_limit=1)
        client = OpenAI(base_url=sb.base_url, api_key="sk-test", max_retries=0)
        file_id = _upload(client, training_jsonl())
        client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id)
        with pytest.raises(openai.RateLimitError) as info:
            client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id)
        assert "maximum of 1 fine-tuning requests per day" in info.value.message
        assert "x-should-retry" not in info.value.response.headers


def test_fine_tuned_model_can_be_deleted(sandbox_client: OpenAI) -> None:
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=_upload(sandbox_client, training_jsonl()), suffix="del"
    )
    model = wait_for_job(sandbox_client, job.id).fine_tuned_model
    assert model is not None
    assert sandbox_client.models.delete(model).deleted is True
    with pytest.raises(openai.NotFoundError):
        sandbox_client.models.retrieve(model)
    with pytest.raises(openai.NotFoundError):
        sandbox_client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": "x"}]
        )


def test_unknown_job_is_404(sandbox_client: OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        sandbox_client.fine_tuning.jobs.retrieve("ftjob-doesnotexist")


def test_running_job_estimates_its_finish_and_nulls_mean_not_set() -> None:
    with run_sandbox(job_seconds=2.0) as sb:
        client = OpenAI(
            base_url=sb.base_url, api_key="sk-test", max_retries=0, _strict_response_validation=True
        )
        job = client.fine_tuning.jobs.create(
            model="gpt-4o-mini",
            training_file=_upload(client, training_jsonl()),
            validation_file=None,
            suffix=None,
            metadata=None,
            hyperparameters={"n_epochs": 2, "batch_size": "auto"},
        )
        assert job.hyperparameters.n_epochs == 2 and job.hyperparameters.batch_size == "auto"
        deadline = time.monotonic() + 10
        while (current := client.fine_tuning.jobs.retrieve(job.id)).status != "running":
            assert current.estimated_finish is None
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert current.estimated_finish is not None
        assert current.estimated_finish >= current.created_at
        assert current.hyperparameters.batch_size == 1  # "auto" resolved once queued
        done = wait_for_job(client, job.id)
        assert done.fine_tuned_model is not None
        assert FT_ID.match(done.fine_tuned_model).group("suffix") == ""  # type: ignore[union-attr]
        assert len(list(client.fine_tuning.jobs.checkpoints.list(job.id))) == 2  # two epochs


def test_dpo_job_reads_preference_examples(sandbox_client: OpenAI) -> None:
    line = {
        "input": {"messages": [{"role": "user", "content": "Hi"}]},
        "preferred_output": [{"role": "assistant", "content": "Hello!"}],
        "non_preferred_output": [{"role": "assistant", "content": "Go away."}],
    }
    content = (json.dumps(line) + "\n").encode() * 10
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini",
        training_file=_upload(sandbox_client, content),
        method={"type": "dpo", "dpo": {"hyperparameters": {"beta": 0.2}}},
    )
    done = wait_for_job(sandbox_client, job.id)
    assert done.status == "succeeded"
    assert done.method is not None and done.method.dpo is not None
    assert done.method.dpo.hyperparameters is not None
    assert done.method.dpo.hyperparameters.beta == 0.2


def test_validation_file_adds_validation_metrics(sandbox_client: OpenAI) -> None:
    training = _upload(sandbox_client, training_jsonl(10))
    validation = _upload(sandbox_client, training_jsonl(3), name="valid.jsonl")
    job = sandbox_client.fine_tuning.jobs.create(
        model="gpt-4o-mini", training_file=training, validation_file=validation
    )
    wait_for_job(sandbox_client, job.id)
    events = list(sandbox_client.fine_tuning.jobs.list_events(job.id, limit=100))
    assert events[-2].message == (
        f"Validating training file: {training} and validation file: {validation}"
    )
    last_metrics = next(e for e in events if e.type == "metrics")
    assert "full validation loss=" in last_metrics.message
    checkpoint = next(iter(sandbox_client.fine_tuning.jobs.checkpoints.list(job.id)))
    assert checkpoint.metrics.valid_loss is not None
    assert checkpoint.metrics.full_valid_loss is not None
