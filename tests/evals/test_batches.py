"""`--batch` against the sandbox: no synchronous requests at half the price and the same frame;
a run killed while waiting is collected, not submitted again; two processes submit each
sample once; failing lines and an expired batch still end with every sample; the enqueued-
token limit splits batches; a run that does not wait is finished by collecting; max_cost
holds at the most each batch could cost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pandas as pd
import pytest
from fixtures.evals import TEST_KEY

from evals import Cache, EnvRouter, Question, RunSettings
from evals.runner import cancel_batches, collect_batches, list_batches, run_context
from labmgr.sandbox import run_sandbox

from .batch_child import question as child_question

CHILD = str(Path(__file__).with_name("batch_child.py"))
MODEL = "gpt-4o-mini"


@pytest.fixture
def batches_sandbox() -> Iterator[Any]:
    """A sandbox of this test's own whose batches take half a second."""
    with run_sandbox(batch_seconds=0.5) as handle:
        yield handle


@pytest.fixture
def env_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)


def _settings(**changes: Any) -> RunSettings:
    base = RunSettings(
        max_concurrency=16,
        request_timeout=10,
        progress=False,
        batch=True,
        batch_poll_seconds=0.05,
    )
    return base.updated(**changes)


def _judged() -> Question:
    judge = {
        "type": "rating_judge",
        "model": "gpt-4.1-mini",
        "paraphrases": ["Rate from 0 to 100 how nice this answer is: {answer}"],
    }
    return Question.create(
        type="free_form",
        name="judged",
        paraphrases=["Name a colour.", "Name a fruit.", "Name a city."],
        samples_per_paraphrase=3,
        temperature=0,
        max_tokens=8,
        judges={"nice": judge},
    )


def _stats(sandbox: Any) -> dict[str, int]:
    return {k: int(v) for k, v in sandbox.stats()["requests"].items()}


def _client(sandbox: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=sandbox.base_url, api_key=TEST_KEY, max_retries=0)


def _batches(sandbox: Any) -> list[Any]:
    return list(_client(sandbox).batches.list(limit=100))


def test_a_batch_run_sends_no_chat_request_costs_half_and_gives_the_same_frame(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    groups = {"g": [MODEL]}
    batched = _judged().ask(groups, cache=tmp_path / "a", router=router, settings=_settings())
    requests = _stats(batches_sandbox)
    assert requests.get("chat.completions", 0) == 0
    assert requests["batches.create"] == 2  # the answers, then their judges
    assert batched.outcome.errors == {} and batched.outcome.pending == 0
    assert batched.frame["nice"].notna().all() and len(batched.frame) == 9

    synchronous = _judged().ask(
        groups, cache=tmp_path / "b", router=router, settings=_settings(batch=False)
    )
    assert _stats(batches_sandbox)["chat.completions"] > 0
    pd.testing.assert_frame_equal(batched.frame, synchronous.frame)
    assert synchronous.outcome.prompt_tokens == batched.outcome.prompt_tokens
    assert batched.outcome.cost == pytest.approx(synchronous.outcome.cost / 2)

    before = _stats(batches_sandbox)
    again = _judged().df(
        groups, cache=tmp_path / "a", router=router, settings=_settings(batch=False)
    )
    assert _stats(batches_sandbox) == before  # a later synchronous run reuses the batch's answers
    pd.testing.assert_frame_equal(again, batched.frame)


def _child(sandbox: Any, cache_dir: Path, samples: int, out: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.Popen(
        [sys.executable, CHILD, sandbox.base_url, str(cache_dir), str(samples), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def test_a_run_killed_while_waiting_is_collected_by_the_next_run_not_submitted_again(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=3.0) as sandbox:
        cache = Cache(tmp_path / "cache")
        child = _child(sandbox, cache.directory, 5, tmp_path / "out.json")
        deadline = time.monotonic() + 60
        while not any(r.batch_id for r in cache.batches.records(active_only=True)):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child submitted nothing"
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert len(_batches(sandbox)) == 1
        df = child_question(5).df(
            {"g": [MODEL]},
            cache=cache,
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(use_n=False),
        )
        assert len(_batches(sandbox)) == 1  # the killed run's batch was collected
        assert len(df) == 10 and df["answer"].notna().all()
        assert _stats(sandbox).get("chat.completions", 0) == 0
        assert cache.batches.records(active_only=True) == []


def test_two_processes_batching_one_question_submit_each_sample_once(
    batches_sandbox: Any, tmp_path: Path
) -> None:
    cache_dir = tmp_path / "cache"
    children = [_child(batches_sandbox, cache_dir, 6, tmp_path / f"out{i}.json") for i in range(2)]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
    first, second = (json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2))
    assert first["errors"] == second["errors"] == 0
    assert first["answers"] == second["answers"]
    lines = sum(batch.request_counts.total for batch in _batches(batches_sandbox))
    assert lines == 12  # one line per sample (no `n`), each in one batch only
    assert Cache(cache_dir).info().samples == 12


def test_failing_batch_lines_go_into_later_batches_until_every_sample_is_there(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    batches_sandbox.set_faults(batch_line_error_rate=0.4)
    q = child_question(6)
    df = q.df(
        {"g": [MODEL]},
        cache=tmp_path / "cache",
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(use_n=False, batch_max_rounds=12),
    )
    assert len(df) == 12 and df["answer"].notna().all() and df["error"].isna().all()
    batches = _batches(batches_sandbox)
    assert len(batches) > 1
    assert sum(b.request_counts.failed for b in batches) > 0


def test_failing_lines_past_the_rounds_are_errors_not_answers(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    batches_sandbox.set_faults(batch_line_error_rate=1.0)
    cache = Cache(tmp_path / "cache")
    df = child_question(2).df(
        {"g": [MODEL]},
        cache=cache,
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(use_n=False, batch_max_rounds=2),
    )
    assert df["answer"].isna().all() and df["error"].str.contains("gave up after 2").all()
    assert len(_batches(batches_sandbox)) == 2
    assert cache.info().samples == 0 and cache.info().errors == 4


def test_an_expired_batch_gives_what_it_finished_and_only_the_rest_is_sent_again(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=2.0) as sandbox:
        sandbox.set_faults(batch_window_s=1.0)  # expires a little over half way through
        result: dict[str, Any] = {}

        def run() -> None:
            result["df"] = child_question(10).df(
                {"g": [MODEL]},
                cache=tmp_path / "cache",
                router=EnvRouter(base_url=sandbox.base_url),
                settings=_settings(use_n=False),
            )

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 30
        while not _batches(sandbox):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        sandbox.set_faults(batch_window_s=None)  # later batches get the whole window
        thread.join(60)
        df = result["df"]
        assert len(df) == 20 and df["answer"].notna().all()
        first, second = sorted(_batches(sandbox), key=lambda b: b.created_at)
        assert first.status == "expired" and 0 < first.request_counts.completed < 20
        assert second.request_counts.total == 20 - first.request_counts.completed


def test_over_the_enqueued_token_limit_batches_are_split_smaller(
    tmp_path: Path, env_key: None
) -> None:
    limits = {MODEL: {"batch_queue_tokens": 200}}
    with run_sandbox(batch_seconds=0.3, limits=limits) as sandbox:
        df = child_question(10).df(  # 20 lines of about 15 tokens each: 300 in all
            {"g": [MODEL]},
            cache=tmp_path / "cache",
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(use_n=False),
        )
        assert df["answer"].notna().all()
        batches = _batches(sandbox)
        failed = [b for b in batches if b.status == "failed"]
        assert failed and failed[0].errors.data[0].code == "token_limit_exceeded"
        completed = [b for b in batches if b.status == "completed"]
        assert sum(b.request_counts.total for b in completed) == 20


def test_a_run_that_does_not_wait_is_finished_by_collecting(tmp_path: Path, env_key: None) -> None:
    with run_sandbox(batch_seconds=1.0) as sandbox:
        router = EnvRouter(base_url=sandbox.base_url)
        cache = Cache(tmp_path / "cache")
        answers = child_question(3).ask(
            {"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch_wait=False)
        )
        assert answers.outcome.pending == 6
        assert answers.frame["error"].str.contains("run again or `labmgr batches collect`").all()
        ctx = run_context(cache=cache, router=router, settings=_settings())
        listed = list_batches(ctx, refresh=True)
        assert [state.record.state for state in listed] == ["submitted"]
        collected = collect_batches(ctx)
        assert collected.samples == 6 and collected.cost > 0
        assert list_batches(ctx, active_only=True) == []
        before = _stats(sandbox)
        df = child_question(3).df(
            {"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch=False)
        )
        assert df["answer"].notna().all() and _stats(sandbox) == before


def test_a_cancelled_batch_keeps_what_it_finished_and_the_next_run_sends_the_rest(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=4.0) as sandbox:
        router = EnvRouter(base_url=sandbox.base_url)
        cache = Cache(tmp_path / "cache")
        q = child_question(10)
        q.ask(
            {"g": [MODEL]},
            cache=cache,
            router=router,
            settings=_settings(batch_wait=False, use_n=False),
        )
        ctx = run_context(cache=cache, router=router, settings=_settings())
        time.sleep(2.0)  # about half the lines are done
        cancelled = cancel_batches(ctx)
        assert [state.status for state in cancelled] == ["cancelling"]
        answers = q.ask({"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False))
        assert answers.frame["answer"].notna().all()
        first, second = sorted(_batches(sandbox), key=lambda b: b.created_at)
        assert first.status == "cancelled" and 0 < first.request_counts.completed < 20
        assert second.request_counts.total == 20 - first.request_counts.completed


def test_a_model_s_samples_are_split_into_batches_of_at_most_batch_max_requests(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    df = child_question(4).df(
        {"g": [MODEL, "gpt-4.1-nano"]},
        cache=tmp_path / "cache",
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(use_n=False, batch_max_requests=3),
    )
    assert len(df) == 16 and df["answer"].notna().all()
    batches = _batches(batches_sandbox)
    assert sorted(b.request_counts.total for b in batches) == [2, 2, 3, 3, 3, 3]
    by_model = {
        m: sum(b.request_counts.total for b in batches if b.model == m)
        for m in (MODEL, "gpt-4.1-nano")
    }
    assert by_model == {MODEL: 8, "gpt-4.1-nano": 8}


def _claim_like_a_dead_run(cache: Cache, router: EnvRouter, q: Question) -> tuple[str, bytes]:
    """Claim every sample of `q` as a run killed while creating its batch leaves them: a
    `submitting` record whose lease is over. Returns its id and the input file it wrote."""
    from evals.cache import BatchLine, BatchRecord, new_record_id
    from evals.runner import plan_question

    planned = plan_question(q, {"g": [MODEL]}, router)
    lines, content = [], b""
    for p in planned:
        assert p.request is not None and p.endpoint is not None
        for ix in range(p.samples):
            custom_id = f"l{len(lines)}"
            lines.append(BatchLine(custom_id, p.request.cache_key, (ix,)))
            body = {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions"}
            body["body"] = p.request.body(1)
            content += json.dumps(body).encode() + b"\n"
    endpoint = router.endpoint_for(MODEL)
    record = BatchRecord(new_record_id(), endpoint.id, endpoint.identity, MODEL, q.name)
    assert len(cache.batches.claim(record, lines, 300)) == len(lines)
    cache.batches.let_go(record.id)
    return record.id, content


def test_a_batch_created_but_never_recorded_is_found_by_its_metadata_and_collected(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    q = child_question(2)
    record_id, content = _claim_like_a_dead_run(cache, router, q)
    client = _client(batches_sandbox)
    uploaded = client.files.create(file=("in.jsonl", content), purpose="batch")
    client.batches.create(
        input_file_id=uploaded.id,
        endpoint="/v1/chat/completions",
        completion_window="24h",
        metadata={"labmgr_record": record_id},
    )
    df = q.df({"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False))
    assert df["answer"].notna().all() and len(df) == 4
    assert _stats(batches_sandbox)["batches.create"] == 1  # adopted, not sent again


def test_samples_claimed_by_a_run_that_died_before_its_batch_existed_are_sent_by_the_next(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    q = child_question(2)
    record_id, _ = _claim_like_a_dead_run(cache, router, q)
    df = q.df({"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False))
    assert df["answer"].notna().all() and len(df) == 4
    assert _stats(batches_sandbox)["batches.create"] == 1
    released = cache.batches.get(record_id)
    assert released is not None and released.state == "released"


def test_a_model_that_gives_one_sample_per_request_gets_batch_lines_of_one_sample(
    lab_settings: Any, batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    from labmgr.settings import load_settings

    lab_settings.config_path.write_text('[models."gpt-4.1-nano"]\nn = false\n')
    ctx = run_context(
        lab=load_settings(),
        cache=tmp_path / "cache",
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(),
    )
    df = child_question(4).df({"g": [MODEL, "gpt-4.1-nano"]}, context=ctx)
    assert len(df) == 16 and df["answer"].notna().all()
    client = _client(batches_sandbox)
    n_of: dict[str, list[int]] = {MODEL: [], "gpt-4.1-nano": []}
    for batch in _batches(batches_sandbox):
        for line in client.files.content(batch.input_file_id).text.splitlines():
            body = json.loads(line)["body"]
            n_of[body["model"]].append(body.get("n", 1))
    assert n_of == {MODEL: [4, 4], "gpt-4.1-nano": [1] * 8}


def test_max_cost_with_batch_submits_only_what_the_budget_covers_at_its_most_expensive(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    question = Question.create(
        type="free_form",
        name="long answers",
        paraphrases=["Describe a colour.", "Describe an animal."],
        samples_per_paraphrase=6,
        max_tokens=40,  # completion tokens cost more than prompt tokens: they dominate here
    )
    groups = {"g": [MODEL]}
    settings = _settings(use_n=False, batch_max_requests=2)
    whole = question.ask(groups, cache=tmp_path / "whole", router=router, settings=settings)
    assert whole.outcome.errors == {} and whole.outcome.cost > 0
    created = _stats(batches_sandbox)["batches.create"]

    budget = whole.outcome.cost / 2
    capped = question.ask(
        groups, cache=tmp_path / "capped", router=router, settings=settings.updated(max_cost=budget)
    )
    assert capped.outcome.cost <= budget
    assert "max_cost" in (capped.outcome.stopped or "")
    assert 0 < capped.outcome.samples < whole.outcome.samples
    not_run = capped.outcome.errors.values()
    assert len(not_run) == whole.outcome.samples - capped.outcome.samples
    assert all("max_cost" in message for message in not_run)
    assert 0 < _stats(batches_sandbox)["batches.create"] - created < created


def _long_answers() -> Question:
    return Question.create(
        type="free_form",
        name="long answers",
        paraphrases=["Describe a colour.", "Describe an animal."],
        samples_per_paraphrase=3,
        max_tokens=40,  # completion tokens dominate the price
    )


def test_a_batch_not_created_for_a_server_error_is_tried_each_round_then_each_sample_says_why(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    batches_sandbox.set_faults(rate_500=1.0, endpoints=["batches.create"])
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    question = _long_answers()
    groups = {"g": [MODEL]}
    most = question.estimate(groups, cache=cache, router=router).batch_cost
    # The budget covers one round at its most expensive, not two: batches never created
    # spend nothing, so later rounds must not be refused for the budget.
    settings = _settings(use_n=False, batch_max_rounds=3, max_cost=most * 1.5)
    answers = question.ask(groups, cache=cache, router=router, settings=settings)
    assert answers.outcome.stopped is None and answers.outcome.cost == 0
    errors = answers.frame["error"]
    assert len(errors) == 6 and errors.str.contains("gave up after 3 batches: batch not").all()
    assert errors.str.contains("500").all()
    assert _stats(batches_sandbox).get("batches.create", 0) >= 3
    assert _batches(batches_sandbox) == []
    assert cache.batches.records(active_only=True) == []
    assert cache.info().errors == 6


def test_out_of_credits_a_batch_run_stops_and_creates_no_other_batch(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    batches_sandbox.set_faults(quota_requests=0, endpoints=["batches.create"])
    cache = Cache(tmp_path / "cache")
    answers = child_question(2).ask(
        {"g": [MODEL, "gpt-4.1-nano"]},
        cache=cache,
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(use_n=False, batch_max_rounds=3, batch_max_requests=2),
    )
    assert "429 insufficient_quota" in (answers.outcome.stopped or "")
    errors = answers.frame["error"]
    assert len(errors) == 8 and errors.str.contains("429 insufficient_quota").all()
    refused = errors.str.startswith("batch not created: 429 insufficient_quota")
    assert refused.sum() == 2  # the first batch's lines; the rest were not run
    assert errors[~refused].str.startswith("not run: ").all()
    requests = _stats(batches_sandbox)
    assert requests["files.create"] == 1
    assert requests["batches.create"] == 3  # one batch: the SDK's 2 retries
    assert cache.batches.records(active_only=True) == []


def test_a_batch_that_cannot_be_read_is_left_for_a_later_run_which_collects_it(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    batches_sandbox.set_faults(quota_requests=0, endpoints=["batches.retrieve"])
    first = child_question(2).ask(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False)
    )
    (batch,) = _batches(batches_sandbox)
    errors = first.frame["error"]
    assert len(errors) == 4 and first.frame["answer"].isna().all()
    assert errors.str.startswith(f"cannot read batch {batch.id}: 429 insufficient_quota").all()
    assert cache.info().errors == 0  # not the samples' fault: nothing logged against them
    (record,) = cache.batches.records(active_only=True)
    assert record.batch_id == batch.id

    batches_sandbox.set_faults(quota_requests=None)
    df = child_question(2).df(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False)
    )
    assert len(df) == 4 and df["answer"].notna().all()
    assert _stats(batches_sandbox)["batches.create"] == 1
    assert cache.batches.records(active_only=True) == []


def test_a_line_over_the_enqueued_token_limit_on_its_own_is_an_error_naming_the_limit(
    tmp_path: Path, env_key: None
) -> None:
    limits = {MODEL: {"batch_queue_tokens": 10}}  # a line asks about 15 tokens
    with run_sandbox(batch_seconds=0.3, limits=limits) as sandbox:
        answers = child_question(2).ask(
            {"g": [MODEL]},
            cache=tmp_path / "cache",
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(use_n=False),
        )
        errors = answers.frame["error"]
        assert len(errors) == 4 and answers.frame["answer"].isna().all()
        assert errors.str.contains(
            r"^asks \d+ tokens, more than the enqueued-token limit of 10 for gpt-4o-mini$"
        ).all()
        (refused,) = _batches(sandbox)  # learned from the one refusal, not tried again
        assert refused.status == "failed"


def test_ctrl_c_while_a_batch_is_created_lets_the_next_run_find_it_at_once_and_not_buy_again(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=0.3) as sandbox:
        sandbox.set_faults(latency_ms=1500)  # time to press Ctrl-C while the batch is made
        cache = Cache(tmp_path / "cache")
        child = _child(sandbox, cache.directory, 2, tmp_path / "out.json")
        deadline = time.monotonic() + 60
        while not _stats(sandbox).get("batches.create"):
            assert child.poll() is None, child.stderr.read() if child.stderr else ""
            assert time.monotonic() < deadline, "the child created no batch"
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode != 0 and b"KeyboardInterrupt" in err
        (record,) = cache.batches.records(active_only=True)
        assert record.state == "submitting" and record.lease_until == 0  # not a 5-minute wait
        sandbox.set_faults(latency_ms=0)
        while not _batches(sandbox):  # the server still made the batch the child asked for
            assert time.monotonic() < deadline
            time.sleep(0.02)
        df = child_question(2).df(
            {"g": [MODEL]},
            cache=cache,
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(use_n=False),
        )
        assert len(df) == 4 and df["answer"].notna().all()
        assert _stats(sandbox)["batches.create"] == 1  # adopted by its metadata
        assert cache.batches.records(active_only=True) == []


def test_batches_refused_for_the_enqueued_token_limit_do_not_count_against_max_cost(
    tmp_path: Path, env_key: None
) -> None:
    limits = {MODEL: {"batch_queue_tokens": 200}}  # 6 lines of about 55 tokens each
    with run_sandbox(batch_seconds=0.3, limits=limits) as sandbox:
        router = EnvRouter(base_url=sandbox.base_url)
        cache = Cache(tmp_path / "cache")
        question = _long_answers()
        groups = {"g": [MODEL]}
        most = question.estimate(groups, cache=cache, router=router).batch_cost
        settings = _settings(use_n=False, max_cost=most * 1.5)  # all once, not twice
        answers = question.ask(groups, cache=cache, router=router, settings=settings)
        assert answers.outcome.stopped is None and answers.outcome.errors == {}
        assert answers.frame["answer"].notna().all() and len(answers.frame) == 6
        statuses = sorted(b.status for b in _batches(sandbox))
        assert statuses[-1] == "failed" and "completed" in statuses


def test_against_a_learned_enqueued_token_limit_a_line_that_does_not_fit_waits_for_room(
    tmp_path: Path, env_key: None
) -> None:
    paraphrases = [  # lines of about 65, 130 and 15 tokens, in that order
        "Describe this colour in a word: " + "blue, " * 25,
        "Describe this animal in a word: " + "a large grey cat, " * 22,
        "Hi.",
    ]
    question = Question.create(
        type="free_form", name="sizes", paraphrases=paraphrases, max_tokens=5
    )
    limits = {MODEL: {"batch_queue_tokens": 170}}  # the first two do not fit together
    with run_sandbox(batch_seconds=1.0, limits=limits) as sandbox:
        df = question.df(
            {"g": [MODEL]},
            cache=tmp_path / "cache",
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(),
        )
        assert df["answer"].notna().all() and len(df) == 3
        statuses = [b.status for b in _batches(sandbox)]
        # One refusal teaches the limit; the big line is not sent into a full queue again
        # and again while the first batch runs, the small one goes beside it.
        assert sorted(statuses) == ["completed"] * 3 + ["failed"]


def test_a_finished_batch_whose_output_cannot_be_downloaded_yet_is_read_on_a_later_look(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=1.0) as sandbox:
        router = EnvRouter(base_url=sandbox.base_url)
        cache = Cache(tmp_path / "cache")
        sandbox.set_faults(rate_500=1.0, endpoints=["files.content"])
        result: dict[str, Any] = {}

        def run() -> None:
            result["df"] = child_question(2).df(
                {"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False)
            )

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 30
        while _stats(sandbox).get("files.content", 0) < 3:  # one look, the SDK's 2 retries
            assert thread.is_alive() and time.monotonic() < deadline
            time.sleep(0.02)
        sandbox.set_faults(rate_500=0.0)
        thread.join(60)
        df = result["df"]
        assert len(df) == 4 and df["answer"].notna().all()
        assert _stats(sandbox)["batches.create"] == 1
        assert cache.batches.records(active_only=True) == []


def test_a_finished_batch_whose_output_is_refused_for_good_is_left_for_a_later_run(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    batches_sandbox.set_faults(quota_requests=0, endpoints=["files.content"])
    first = child_question(2).ask(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False)
    )
    (batch,) = _batches(batches_sandbox)
    errors = first.frame["error"]
    assert len(errors) == 4 and first.frame["answer"].isna().all()
    assert errors.str.startswith(f"cannot read the output of batch {batch.id}: 429").all()
    (record,) = cache.batches.records(active_only=True)
    assert record.lease_until == 0  # not held by a collecting lease

    batches_sandbox.set_faults(quota_requests=None)
    df = child_question(2).df(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings(use_n=False)
    )
    assert len(df) == 4 and df["answer"].notna().all()
    assert _stats(batches_sandbox)["batches.create"] == 1


def test_ctrl_c_while_a_batch_is_collected_lets_the_next_run_collect_it_at_once(
    tmp_path: Path, env_key: None
) -> None:
    with run_sandbox(batch_seconds=0.5) as sandbox:
        cache = Cache(tmp_path / "cache")
        child = _child(sandbox, cache.directory, 2, tmp_path / "out.json")
        deadline = time.monotonic() + 60
        while not _stats(sandbox).get("batches.create"):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        sandbox.set_faults(latency_ms=1500)  # time to press Ctrl-C while its output is read
        while not _stats(sandbox).get("files.content"):
            assert child.poll() is None and time.monotonic() < deadline
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=60)
        assert child.returncode != 0 and b"KeyboardInterrupt" in err
        (record,) = cache.batches.records(active_only=True)
        assert record.state == "collecting" and record.lease_until == 0  # not a 10-minute wait
        sandbox.set_faults(latency_ms=0)
        df = child_question(2).df(
            {"g": [MODEL]},
            cache=cache,
            router=EnvRouter(base_url=sandbox.base_url),
            settings=_settings(use_n=False),
        )
        assert len(df) == 4 and df["answer"].notna().all()
        assert _stats(sandbox)["batches.create"] == 1
        assert cache.batches.records(active_only=True) == []


def test_cancelling_a_batch_that_already_finished_says_so_and_it_is_still_collected(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    cache = Cache(tmp_path / "cache")
    child_question(2).ask(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings(batch_wait=False)
    )
    (batch,) = _batches(batches_sandbox)
    client = _client(batches_sandbox)
    deadline = time.monotonic() + 30
    while client.batches.retrieve(batch.id).status != "completed":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    ctx = run_context(cache=cache, router=router, settings=_settings())
    (state,) = cancel_batches(ctx, [batch.id])
    assert state.problem is not None and "cannot be cancelled" in state.problem
    assert state.problem.startswith("400")
    collected = collect_batches(ctx)
    assert collected.samples == 4 and list_batches(ctx, active_only=True) == []


def test_a_run_that_does_not_wait_says_which_samples_were_not_sent_and_why(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    batches_sandbox.set_faults(rate_500=1.0, endpoints=["batches.create"])
    answers = child_question(2).ask(
        {"g": [MODEL]},
        cache=tmp_path / "cache",
        router=EnvRouter(base_url=batches_sandbox.base_url),
        settings=_settings(use_n=False, batch_wait=False),
    )
    assert answers.outcome.pending == 0  # nothing is in a batch to collect
    errors = answers.frame["error"]
    assert len(errors) == 4
    assert errors.str.match(r"not sent: batch not created: 500.*; run again to send it").all()


def test_a_batch_being_created_with_another_key_is_left_for_it_not_waited_for_forever(
    batches_sandbox: Any, tmp_path: Path, env_key: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = Cache(tmp_path / "cache")
    q = child_question(2)
    record_id, _ = _claim_like_a_dead_run(cache, EnvRouter(base_url=batches_sandbox.base_url), q)
    monkeypatch.setenv("LABMGR_OTHER_KEY", TEST_KEY)
    other = EnvRouter(base_url=batches_sandbox.base_url, key_env="LABMGR_OTHER_KEY")
    result: dict[str, Any] = {}

    def run() -> None:
        result["answers"] = q.ask(
            {"g": [MODEL]}, cache=cache, router=other, settings=_settings(use_n=False)
        )

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the run waited for a batch it can never look up"
    errors = result["answers"].frame["error"]
    assert len(errors) == 4
    assert errors.str.contains("was sent with another key or endpoint").all()
    assert errors.str.contains("OPENAI_API_KEY").all()
    record = cache.batches.get(record_id)
    assert record is not None and record.state == "submitting"  # left for the other key


def test_max_cost_with_batch_counts_prompts_given_as_content_parts(
    batches_sandbox: Any, tmp_path: Path, env_key: None
) -> None:
    router = EnvRouter(base_url=batches_sandbox.base_url)
    text = "Here is a long story about a colour, told slowly. " * 40  # prompts cost most here
    question = Question.create(
        type="free_form",
        name="parts",
        messages=[
            [{"role": "user", "content": [{"type": "text", "text": f"{text} ({i}) Name it."}]}]
            for i in range(4)
        ],
        samples_per_paraphrase=2,
        max_tokens=1,
    )
    groups = {"g": [MODEL]}
    settings = _settings(use_n=False, batch_max_requests=2)
    whole = question.ask(groups, cache=tmp_path / "whole", router=router, settings=settings)
    assert whole.outcome.errors == {} and whole.outcome.prompt_tokens > 8 * 400
    budget = whole.outcome.cost / 2
    capped = question.ask(
        groups, cache=tmp_path / "capped", router=router, settings=settings.updated(max_cost=budget)
    )
    assert capped.outcome.cost <= budget
    assert 0 < capped.outcome.samples < whole.outcome.samples
