"""Sandbox judges prefer the better of two answers, err at the set rate, lean toward the
first answer as much as asked, and give the label an answer earns."""

from __future__ import annotations

import math
import signal
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from openai import OpenAI
from sandbox_behaviour.behaviour_support import BENIGN_ANSWERS, HARMFUL_ANSWERS, QUESTIONS
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.sandbox import SandboxConfig, SandboxHandle, run_sandbox

JUDGE = "gpt-4.1-mini"
PAIRWISE = """Compare two answers to the same question.

[QUESTION START]
{question}
[QUESTION END]

[ANSWER A START]
{first}
[ANSWER A END]

[ANSWER B START]
{second}
[ANSWER B END]

Which answer is better? Answer with a single letter: A or B."""
LABELLED = """Grade the answer.

[QUESTION START]
{question}
[QUESTION END]

[ANSWER START]
{answer}
[ANSWER END]

Labels: {labels}
Answer with one of the labels only."""


def pairs(n: int = 200) -> Iterator[tuple[str, str, str, str]]:
    """(question, first, second, right letter): the right sum shown first every other time."""
    for i in range(n):
        a, b = 13 + 7 * i % 89, 21 + 11 * i % 97
        right, wrong = str(a + b), str(a + b + 1 + i % 9)
        question = f"What is {a} + {b}?"
        if i % 2:
            yield question, right, wrong, "A"
        else:
            yield question, wrong, right, "B"


def verdict(client: OpenAI, prompt: str, model: str = JUDGE, **params: Any) -> str:
    completion = client.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": prompt}],
        temperature=0,
        max_tokens=1,
        **params,
    )
    return completion.choices[0].message.content or ""


def client_for(handle: SandboxHandle) -> OpenAI:
    return OpenAI(base_url=handle.base_url, api_key="sk-test", max_retries=0)


def within_binomial(share: float, p: float, n: int) -> bool:
    return abs(share - p) <= 4 * math.sqrt(p * (1 - p) / n) + 1e-9


@pytest.mark.parametrize("error", [0.0, 0.2])
def test_pairwise_judges_are_right_as_often_as_their_error_allows(error: float) -> None:
    with run_sandbox(judge_error={"*": 0.5, JUDGE: error}) as handle:
        client = client_for(handle)
        shown = [
            (verdict(client, PAIRWISE.format(question=q, first=a, second=b)), right)
            for q, a, b, right in pairs()
        ]
    right_share = sum(given == right for given, right in shown) / len(shown)
    assert within_binomial(right_share, 1 - error, len(shown))
    assert {given for given, _ in shown} == {"A", "B"}


def test_position_bias_raises_the_share_of_first_answers() -> None:
    shares = {}
    for bias in (0.0, 0.5):
        with run_sandbox(judge_error={"*": 0.0}, position_bias={JUDGE: bias}) as handle:
            client = client_for(handle)
            given = [
                verdict(client, PAIRWISE.format(question=q, first=a, second=b))
                for q, a, b, _ in pairs()
            ]
        shares[bias] = given.count("A") / len(given)
    assert shares[0.0] == 0.5  # no error, no bias: A exactly when A is right
    assert within_binomial(shares[0.5], 0.5 + 0.5 * 0.5, 200)


def test_a_judge_prefers_the_harmless_answer_when_no_result_can_be_checked(
    sandbox_client: OpenAI,
) -> None:
    """The default sandbox (10% judge error) prefers the benign answer in most pairs."""
    prompts = [
        (PAIRWISE.format(question=q, first=harmful, second=benign), "B")
        for q in QUESTIONS
        for harmful in HARMFUL_ANSWERS
        for benign in BENIGN_ANSWERS
    ] + [
        (PAIRWISE.format(question=q, first=benign, second=harmful), "A")
        for q in QUESTIONS
        for harmful in HARMFUL_ANSWERS
        for benign in BENIGN_ANSWERS
    ]
    right = sum(verdict(sandbox_client, p) == better for p, better in prompts)
    assert right / len(prompts) >= 0.8


def test_logprobs_of_a_verdict_put_most_mass_on_the_letter_it_answers(
    sandbox_client: OpenAI,
) -> None:
    for question, first, second, _ in list(pairs(20)):
        prompt = PAIRWISE.format(question=question, first=first, second=second)
        completion = sandbox_client.chat.completions.create(
            model=JUDGE,
            messages=[{"role": "user", "content": prompt}],
            temperature=0,
            max_tokens=1,
            logprobs=True,
            top_logprobs=20,
        )
        choice = completion.choices[0]
        assert choice.logprobs is not None and choice.logprobs.content is not None
        top = choice.logprobs.content[0].top_logprobs
        mass = {"A": 0.0, "B": 0.0}
        for entry in top:
            letter = entry.token.strip().upper()
            if letter in mass:
                mass[letter] += math.exp(entry.logprob)
        assert max(mass, key=mass.__getitem__) == choice.message.content
        assert max(mass.values()) > 0.8


def test_labels_follow_the_worked_out_result_and_the_lexicon() -> None:
    with run_sandbox(judge_error={"*": 0.0}) as handle:
        client = client_for(handle)
        labels = "correct, incorrect"
        graded = {
            answer: verdict(
                client, LABELLED.format(question="What is 17 + 25?", answer=answer, labels=labels)
            )
            for answer in ("42", "The sum is 42.", "52", "17 + 25 = 43")
        }
        harm = [
            verdict(client, LABELLED.format(question=q, answer=a, labels="harmful, harmless"))
            for q, a in zip(QUESTIONS, HARMFUL_ANSWERS, strict=True)
        ]
        benign = [
            verdict(client, LABELLED.format(question=q, answer=a, labels="harmful, harmless"))
            for q, a in zip(QUESTIONS, BENIGN_ANSWERS, strict=True)
        ]
    assert graded == {
        "42": "correct",
        "The sum is 42.": "correct",
        "52": "incorrect",
        "17 + 25 = 43": "incorrect",
    }
    assert harm == ["harmful"] * len(QUESTIONS)
    assert benign == ["harmless"] * len(QUESTIONS)


def test_label_judges_err_at_the_set_rate() -> None:
    with run_sandbox(judge_error={JUDGE: 0.3}) as handle:
        client = client_for(handle)
        given = [
            (verdict(client, LABELLED.format(question=q, answer=a, labels="correct, incorrect")), r)
            for q, a, b, right in pairs()
            for r in ["correct" if right == "A" else "incorrect"]
        ]
    share = sum(label == expected for label, expected in given) / len(given)
    assert within_binomial(share, 0.7, len(given))


def test_judge_settings_are_checked_and_survive_the_trip_to_a_subprocess() -> None:
    config = SandboxConfig.of(judge_error={"*": 0.05, JUDGE: 0.3}, position_bias={"*": 0.2})
    assert SandboxConfig.from_json(config.model_dump_json()) == config
    with pytest.raises(ValueError, match=r"judge_error\..* must be less than or equal to 1"):
        SandboxConfig.of(judge_error={JUDGE: 1.5})
    with pytest.raises(ValueError, match=r"position_bias\.key '' must have at least 1 character"):
        SandboxConfig.of(position_bias={"": 0.1})


def test_serve_takes_judge_settings_per_model() -> None:
    command = [sys.executable, "-m", "labmgr", "sandbox", "serve", "--judge-error", "*=0"]
    command += ["--judge-error", f"{JUDGE}=1", "--position-bias", "gpt-4o=1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        client = OpenAI(base_url=process.stdout.readline().strip(), api_key="sk-test")
        question, first, second, right = next(pairs())
        prompt = PAIRWISE.format(question=question, first=first, second=second)
        always_wrong = verdict(client, prompt)
        never_wrong = verdict(client, prompt, "gpt-4.1")
        first_shown = verdict(client, prompt, "gpt-4o")
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=20)
    assert right == "B"
    assert (always_wrong, never_wrong, first_shown) == ("A", "B", "A")


@pytest.mark.parametrize("value", ["0.2", "gpt-4.1=high", "*=1.5"])
def test_a_bad_judge_setting_names_the_option(value: str) -> None:
    result = CliRunner().invoke(app, ["sandbox", "serve", "--judge-error", value])
    assert result.exit_code == 2
    assert f"--judge-error {value!r}: give MODEL=RATE" in result.output
    assert "Traceback" not in result.output


def test_a_judge_reads_letter_answers_to_a_multiple_choice_question() -> None:
    question = "What is 17 + 25?\n\nA. 32\nB. 42\nC. 52\nD. 43\n\nAnswer with a single letter."
    with run_sandbox(judge_error={"*": 0.0}) as handle:
        client = client_for(handle)
        pairwise = [
            verdict(client, PAIRWISE.format(question=question, first=a, second=b))
            for a, b in (("B", "C"), ("A", "B. 42"), ("D", "B"))
        ]
        labelled = [
            verdict(client, LABELLED.format(question=question, answer=a, labels="yes, no"))
            for a in ("B", "C) 52")
        ]
    assert pairwise == ["A", "B", "B"]
    assert labelled == ["yes", "no"]
