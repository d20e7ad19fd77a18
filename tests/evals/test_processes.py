"""Crash safety and sharing: SIGKILL midway then resume; Ctrl-C keeps every answer read; two
processes on one cache buy each sample once; a claim left by a killed process is taken over
when its lease ends."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY

from evals import Cache, EnvRouter, Question, RunSettings

from .conftest import served

CHILD = str(Path(__file__).with_name("child_run.py"))


def _child(
    sandbox: Any, cache_dir: Path | str, samples: int, out: Path, lease: float = 30.0
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "OPENAI_API_KEY": TEST_KEY, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, CHILD, sandbox.base_url, str(cache_dir), str(samples), str(out)]
    return subprocess.Popen(
        [*command, str(lease)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        # Ctrl-C reaches the child even when this suite runs in the background (`make test &`,
        # nohup, some CI runners), where SIGINT is inherited as ignored.
        preexec_fn=_sigint_default,
    )


def _sigint_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _settle(sandbox: Any) -> None:
    """Let requests a killed client left in flight finish, then zero the counters."""
    deadline = time.monotonic() + 30
    while sandbox.stats().get("in_flight", 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    sandbox.reset()


def _shared(samples: int) -> Question:
    return Question.create(
        type="free_form",
        name="shared",
        paraphrases=["Name a colour."],
        samples_per_paraphrase=samples,
        max_tokens=5,
    )


def test_a_run_killed_midway_resumes_and_buys_only_what_is_missing(
    sandbox: Any, tmp_path: Path, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(latency_ms=30)
    cache = Cache(tmp_path / "cache")
    child = _child(sandbox, cache.directory, 60, tmp_path / "out.json")
    deadline = time.monotonic() + 60
    while cache.info().samples < 6:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the child bought nothing"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    kept = cache.info().samples
    assert 6 <= kept < 60
    _settle(sandbox)
    settings = fast_settings.model_copy(update={"use_n": False})
    df = _shared(60).df({"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=settings)
    assert served(sandbox) == 60 - kept
    assert df["answer"].notna().all() and len(df) == 60


def test_two_processes_on_one_question_buy_each_sample_once_and_agree(
    sandbox: Any, tmp_path: Path, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(latency_ms=20)
    cache_dir = tmp_path / "cache"
    children = [_child(sandbox, cache_dir, 30, tmp_path / f"out{i}.json") for i in range(2)]
    for child in children:
        _, err = child.communicate(timeout=120)
        assert child.returncode == 0, err.decode()
    first, second = (json.loads((tmp_path / f"out{i}.json").read_text()) for i in range(2))
    assert first["errors"] == second["errors"] == 0
    assert first["answers"] == second["answers"]
    assert served(sandbox) == 30, "a sample was bought by both processes"
    cache = Cache(cache_dir)
    assert cache.info().samples == 30 and cache.info().claims == 0
    df = _shared(30).df({"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=fast_settings)
    assert df["answer"].tolist() == first["answers"]
    assert served(sandbox) == 30


def test_the_claims_of_a_killed_process_are_taken_over_when_their_lease_ends(
    sandbox: Any, tmp_path: Path, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(latency_ms=100)
    cache = Cache(tmp_path / "cache", lease_seconds=2)
    child = _child(sandbox, tmp_path / "cache", 40, tmp_path / "out.json", lease=2)
    deadline = time.monotonic() + 60
    while cache.info().samples < 4:
        assert child.poll() is None, child.stderr.read() if child.stderr else ""
        assert time.monotonic() < deadline, "the child bought nothing"
        time.sleep(0.02)
    child.send_signal(signal.SIGKILL)
    child.wait()
    kept = cache.info().samples
    left = cache.info().claims
    assert left == 40, "the killed process should still hold a claim on every sample"
    _settle(sandbox)
    settings = fast_settings.model_copy(update={"use_n": False})
    df = _shared(40).df({"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=settings)
    assert df["answer"].notna().all() and len(df) == 40
    assert served(sandbox) == 40 - kept, "each sample the killed process left was bought once"
    assert cache.info().claims == 0


def test_ctrl_c_stops_the_run_and_keeps_every_finished_sample(
    sandbox: Any, tmp_path: Path, router: EnvRouter, fast_settings: RunSettings
) -> None:
    sandbox.set_faults(latency_ms=30)
    cache = Cache(tmp_path / "cache")
    child = _child(sandbox, cache.directory, 60, tmp_path / "out.json")
    deadline = time.monotonic() + 60
    while cache.info().samples < 4:
        assert child.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode != 0 and b"KeyboardInterrupt" in err
    assert not (tmp_path / "out.json").exists()
    kept = cache.info().samples
    assert 4 <= kept < 60
    _settle(sandbox)
    settings = fast_settings.model_copy(update={"use_n": False})
    _shared(60).df({"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=settings)
    assert served(sandbox) == 60 - kept


def test_a_run_interrupted_as_an_answer_arrives_keeps_every_answer_it_read(
    sandbox: Any, tmp_path: Path, router: EnvRouter, fast_settings: RunSettings
) -> None:
    """Ctrl-C just as an answer is read: when the interrupt reaches the caller, each answer
    the run read (and priced) is in the cache, none held back unwritten."""
    sandbox.set_faults(latency_ms=30)
    cache = Cache(tmp_path / "cache")
    read: list[str] = []

    def price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
        read.append(model)
        if len(read) == 1:
            # A researcher's Ctrl-C on the first answer; held longer than the caller takes to
            # notice it, so the run is cancelled with this answer read and not yet written.
            signal.raise_signal(signal.SIGINT)
            time.sleep(0.3)
        return 0.0

    settings = fast_settings.model_copy(update={"use_n": False, "max_concurrency": 64})
    # The interrupt this test sends is Python's own, even where SIGINT came in ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            _shared(400).df(
                {"g": ["gpt-4o-mini"]}, cache=cache, router=router, settings=settings, price=price
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    assert read, "no answer was read before the interrupt"
    assert cache.info().samples == len(read), "an answer the run read was not kept"
    assert cache.info().samples < 400, "the interrupt came after the whole run"
