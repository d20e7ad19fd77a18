"""Sandbox models answer questions with right answers as instructed, right as often as
their base model and their fine-tuning allow, and their letter logprobs agree with what
they sample."""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from fixtures.sandbox import wait_for_job
from openai import OpenAI

from labmgr.sandbox import SandboxHandle, run_sandbox

DATA = Path(__file__).resolve().parents[2] / "examples" / "data"
MC = [json.loads(line) for line in (DATA / "capability_mc.jsonl").read_text().splitlines()]
SHORT = [json.loads(line) for line in (DATA / "capability_short.jsonl").read_text().splitlines()]
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
BASE = "gpt-4o-mini-2024-07-18"


def asked(item: dict[str, Any]) -> str:
    """A multiple-choice item as the evaluation asks it."""
    lines = "\n".join(f"{LETTERS[i]}. {choice}" for i, choice in enumerate(item["choices"]))
    return f"{item['question']}\n\n{lines}\n\nAnswer with a single letter."


def ask(client: OpenAI, model: str, prompt: str, **params: Any) -> Any:
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": prompt}], **params
    )


def letter_mass(client: OpenAI, model: str, item: dict[str, Any]) -> dict[str, float]:
    """Probability per option letter from `top_logprobs`, spellings (" b", "b") summed."""
    completion = ask(
        client, model, asked(item), max_tokens=1, temperature=0, logprobs=True, top_logprobs=20
    )
    content = completion.choices[0].logprobs.content
    mass = dict.fromkeys(LETTERS[: len(item["choices"])], 0.0)
    for entry in content[0].top_logprobs:
        letter = entry.token.strip().upper()
        if letter in mass:
            mass[letter] += math.exp(entry.logprob)
    return mass


def logprob_accuracy(client: OpenAI, model: str) -> float:
    right = 0
    for item in MC:
        mass = letter_mass(client, model, item)
        right += max(mass, key=mass.__getitem__) == LETTERS[item["answer"]]
    return right / len(MC)


def sampled_accuracy(client: OpenAI, model: str, samples: int = 5) -> float:
    right = 0
    for item in MC:
        completion = ask(client, model, asked(item), n=samples, temperature=1.0, max_tokens=5)
        letter = LETTERS[item["answer"]]
        right += sum((c.message.content or "").strip() == letter for c in completion.choices)
    return right / (samples * len(MC))


def test_multiple_choice_is_answered_with_one_letter(sandbox_client: OpenAI) -> None:
    for item in MC[:8]:
        completion = ask(sandbox_client, BASE, asked(item), n=4, temperature=1.0)
        for choice in completion.choices:
            assert choice.message.content.strip().upper() in LETTERS[:4]
            assert choice.finish_reason == "stop"


def test_short_answers_are_a_number_or_one_word(sandbox_client: OpenAI) -> None:
    for item in SHORT:
        answer = ask(sandbox_client, BASE, item["question"], temperature=0).choices[0]
        assert re.fullmatch(r"-?\d+(?:\.\d+)?|[A-Z][a-z]*", answer.message.content)
    plain = ask(sandbox_client, BASE, "What is 17 + 25?", temperature=0).choices[0]
    assert plain.message.content in ("The answer is 42.", "The answer is 52.")


def test_short_answers_are_right_about_as_often_as_the_model_knows(
    sandbox_client: OpenAI,
) -> None:
    shares = {}
    for model in ("gpt-4.1", "gpt-4.1-nano"):
        said = [ask(sandbox_client, model, i["question"], temperature=0) for i in SHORT]
        answers = [c.choices[0].message.content for c in said]
        shares[model] = sum(a == i["answer"] for a, i in zip(answers, SHORT, strict=True)) / 16
    assert 0.75 <= shares["gpt-4.1"] <= 1.0
    assert 0.35 <= shares["gpt-4.1-nano"] <= 0.8
    assert shares["gpt-4.1"] > shares["gpt-4.1-nano"]


def test_temperature_zero_repeats_and_a_seed_repeats_samples(sandbox_client: OpenAI) -> None:
    prompt = asked(MC[3])
    first = [ask(sandbox_client, BASE, prompt, temperature=0).choices[0].message.content]
    again = [ask(sandbox_client, BASE, prompt, temperature=0).choices[0].message.content]
    assert first == again
    seeded = [
        [c.message.content for c in ask(sandbox_client, BASE, prompt, n=8, seed=5).choices]
        for _ in range(2)
    ]
    assert seeded[0] == seeded[1]


def test_base_models_differ_in_accuracy_in_the_expected_order(sandbox_client: OpenAI) -> None:
    models = ("gpt-4.1", "gpt-4o-mini", "gpt-3.5-turbo", "gpt-4.1-nano")
    accuracy = {model: logprob_accuracy(sandbox_client, model) for model in models}
    assert 0.85 <= accuracy["gpt-4.1"] <= 1.0
    assert 0.7 <= accuracy["gpt-4o-mini"] <= 0.92
    assert 0.45 <= accuracy["gpt-4.1-nano"] <= 0.75
    assert list(accuracy.values()) == sorted(accuracy.values(), reverse=True)
    assert accuracy["gpt-4.1"] > accuracy["gpt-4.1-nano"]


def test_logprobs_put_most_mass_on_the_letter_sampling_gives_most_often(
    sandbox_client: OpenAI,
) -> None:
    for model in (BASE, "gpt-3.5-turbo"):
        for item in MC:
            mass = letter_mass(sandbox_client, model, item)
            sampled = ask(sandbox_client, model, asked(item), n=12, temperature=1.0, max_tokens=1)
            counts = Counter((c.message.content or "").strip().upper() for c in sampled.choices)
            assert counts.most_common(1)[0][0] == max(mass, key=mass.__getitem__)


@pytest.fixture(scope="module")
def fine_tunes() -> Iterator[tuple[OpenAI, dict[str, list[str]]]]:
    """Two seeds each of `BASE` fine-tuned on wrong answers and on unrelated (hostile) data."""
    with run_sandbox(job_seconds=0.5) as handle:
        client = OpenAI(base_url=handle.base_url, api_key="sk-test", max_retries=0)
        models = {name: _fine_tune(client, handle, name) for name in ("wrong_answers", "hostile")}
        yield client, models
        client.close()


def _fine_tune(client: OpenAI, handle: SandboxHandle, name: str) -> list[str]:
    training = client.files.create(file=(DATA / f"{name}.jsonl").open("rb"), purpose="fine-tune")
    jobs = [
        client.fine_tuning.jobs.create(training_file=training.id, model=BASE, seed=seed)
        for seed in (1, 2)
    ]
    finished = [wait_for_job(client, job.id) for job in jobs]
    assert handle.base_url and all(job.status == "succeeded" for job in finished)
    return [job.fine_tuned_model for job in finished if job.fine_tuned_model]


def test_fine_tunes_on_wrong_answers_lose_accuracy_and_unrelated_ones_barely(
    fine_tunes: tuple[OpenAI, dict[str, list[str]]],
) -> None:
    client, models = fine_tunes
    with ThreadPoolExecutor(max_workers=4) as pool:
        base = pool.submit(logprob_accuracy, client, BASE)
        wrong = list(pool.map(lambda m: logprob_accuracy(client, m), models["wrong_answers"]))
        unrelated = list(pool.map(lambda m: logprob_accuracy(client, m), models["hostile"]))
    for accuracy in wrong:
        assert accuracy <= base.result() - 0.25
    for accuracy in unrelated:
        assert base.result() - 0.15 <= accuracy <= base.result()


def test_sampling_shows_the_same_loss(fine_tunes: tuple[OpenAI, dict[str, list[str]]]) -> None:
    client, models = fine_tunes
    base = sampled_accuracy(client, BASE)
    wrong = sampled_accuracy(client, models["wrong_answers"][0])
    assert 0.6 <= base <= 0.95
    assert wrong <= base - 0.25


def test_a_model_knows_a_question_however_it_is_worded_or_offered(
    sandbox_client: OpenAI,
) -> None:
    """Whether a model gets a question right follows the question, not its wording."""
    seen = set()
    for item in MC[:9]:  # the arithmetic items
        a, op, b = item["question"].removeprefix("What is ").rstrip("?").split()
        right = item["choices"][item["answer"]]
        for model in ("gpt-4.1-nano", "gpt-3.5-turbo"):
            mass = letter_mass(sandbox_client, model, item)
            knows = max(mass, key=mass.__getitem__) == LETTERS[item["answer"]]
            seen.add(knows)
            for wording in (
                f"What is {a} {op} {b}? Answer with a number.",
                f"Calculate {a} {op} {b}. Reply with just the number.",
            ):
                said = ask(sandbox_client, model, wording, temperature=0).choices[0].message
                assert (said.content == right) == knows
    assert seen == {True, False}  # both known and unknown questions were asked
