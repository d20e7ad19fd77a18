"""Enforced rate limits: OpenAI's 429 wording and headers, continuous refill, live changes,
snapshots and fine-tunes under their base model, project caps, counters."""

from __future__ import annotations

import json
import math
import re
import time
import urllib.error
from pathlib import Path

import openai
import pytest
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI

from labmgr.sandbox import SandboxHandle, run_sandbox

MESSAGES = [{"role": "user", "content": "Is the sky blue? Answer yes or no."}]
WAIT = r"(?P<wait>\d+ms|\d+(?:\.\d+)?s)"
LEARN_MORE = r"Visit https://platform\.openai\.com/account/rate-limits to learn more\."


def _client(sb: SandboxHandle, key: str = "sk-test", retries: int = 0) -> OpenAI:
    return OpenAI(
        base_url=sb.base_url, api_key=key, max_retries=retries, _strict_response_validation=True
    )


def _seconds(duration: str) -> float:
    """A Go-style duration as OpenAI writes it (``20ms``, ``19.97s``, ``1m2s``) in seconds."""
    match = re.fullmatch(r"(?:(\d+)m)?(\d+(?:\.\d+)?)(ms|s)", duration)
    assert match, duration
    minutes, value, unit = match.groups()
    return int(minutes or 0) * 60 + float(value) / (1000 if unit == "ms" else 1)


def _ask(client: OpenAI, model: str = "gpt-4.1-mini", **params: object) -> object:
    return client.chat.completions.with_raw_response.create(
        model=model, messages=MESSAGES, **params
    )


def test_over_the_requests_limit_is_openais_429_with_wording_and_headers() -> None:
    with run_sandbox(limits={"gpt-4.1-mini": {"rpm": 3}}) as sb:
        client = _client(sb)
        remaining = []
        for _ in range(3):
            raw = _ask(client, max_tokens=5)
            assert raw.headers["x-ratelimit-limit-requests"] == "3"
            remaining.append(int(raw.headers["x-ratelimit-remaining-requests"]))
            assert "x-ratelimit-limit-tokens" not in raw.headers  # no TPM limit set
        assert remaining == [2, 1, 0]
        with pytest.raises(openai.RateLimitError) as info:
            _ask(client, max_tokens=5)
    error = info.value
    assert error.code == "rate_limit_exceeded" and error.type == "requests"
    match = re.fullmatch(
        r"Rate limit reached for gpt-4\.1-mini in organization org-sandbox on requests per "
        rf"min \(RPM\): Limit 3, Used 3, Requested 1\. Please try again in {WAIT}\. {LEARN_MORE}",
        error.body["message"],  # type: ignore[index]
    )
    assert match, error.body
    headers = error.response.headers
    wait = _seconds(match["wait"])
    assert 19.0 < wait <= 20.0  # one request refills in 60 s / 3
    assert float(headers["retry-after-ms"]) == pytest.approx(wait * 1000, abs=1)
    assert headers["retry-after"] == str(math.ceil(wait))
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert _seconds(headers["x-ratelimit-reset-requests"]) > 59


def test_over_the_tokens_limit_counts_prompt_plus_budget_times_n() -> None:
    with run_sandbox(limits={"gpt-4o-mini": {"tpm": 1000}}) as sb:
        client = _client(sb)
        first = _ask(client, "gpt-4o-mini", max_tokens=400)
        prompt = first.parse().usage.prompt_tokens  # type: ignore[attr-defined]
        assert int(first.headers["x-ratelimit-remaining-tokens"]) == 1000 - (prompt + 400)
        assert first.headers["x-ratelimit-limit-tokens"] == "1000"
        with pytest.raises(openai.RateLimitError) as info:
            _ask(client, "gpt-4o-mini", max_completion_tokens=300, n=2)
        message = info.value.body["message"]  # type: ignore[index]
        match = re.fullmatch(
            r"Rate limit reached for gpt-4o-mini in organization org-sandbox on tokens per min "
            rf"\(TPM\): Limit 1000, Used (?P<used>\d+), Requested {prompt + 600}\. "
            rf"Please try again in {WAIT}\. {LEARN_MORE}",
            message,
        )
        assert match, message
        assert info.value.type == "tokens"
        used = int(match["used"])
        assert prompt + 400 - 20 <= used <= prompt + 400  # less what refilled meanwhile
        with pytest.raises(openai.RateLimitError) as info:
            _ask(client, "gpt-4o-mini", max_tokens=2000)
        assert info.value.body["message"] == (  # type: ignore[index]
            f"Request too large for gpt-4o-mini in organization org-sandbox on tokens per min "
            f"(TPM): Limit 1000, Requested {prompt + 2000}. The input or output tokens must be "
            "reduced in order to run successfully. Visit "
            "https://platform.openai.com/account/rate-limits to learn more."
        )
        assert "retry-after-ms" not in info.value.response.headers


def test_without_a_budget_the_completion_is_counted_after_the_answer() -> None:
    with run_sandbox(limits={"gpt-4o-mini": {"tpm": 100_000}}) as sb:
        raw = _ask(_client(sb), "gpt-4o-mini")
        usage = raw.parse().usage  # type: ignore[attr-defined]
        assert usage.completion_tokens > 0
        assert int(raw.headers["x-ratelimit-remaining-tokens"]) == (
            100_000 - usage.prompt_tokens - usage.completion_tokens
        )


def test_legacy_completions_count_every_prompt_and_its_default_budget() -> None:
    with run_sandbox(limits={"gpt-4o-mini": {"tpm": 10_000}}) as sb:
        raw = _client(sb).completions.with_raw_response.create(
            model="gpt-4o-mini", prompt=["Say yes.", "Say no."]
        )
        usage = raw.parse().usage
        assert usage is not None
        # each prompt may generate 16 tokens (the endpoint's default max_tokens)
        expected = 10_000 - usage.prompt_tokens - 2 * 16
        assert int(raw.headers["x-ratelimit-remaining-tokens"]) == expected


def test_the_bucket_refills_continuously_not_once_a_minute() -> None:
    with run_sandbox(limits={"gpt-4o-mini": {"rpm": 60}}) as sb:
        client = _client(sb)
        for _ in range(200):  # 60 fit at once; a few more refill while they run
            try:
                _ask(client, "gpt-4o-mini", max_tokens=1)
            except openai.RateLimitError as exc:
                wait_ms = float(exc.response.headers["retry-after-ms"])
                break
        else:
            raise AssertionError("the requests limit never refused a request")
        assert 0 < wait_ms <= 1000  # one request refills in a second, not at the minute
        time.sleep(wait_ms / 1000 + 0.05)
        raw = _ask(client, "gpt-4o-mini", max_tokens=1)
        assert raw.status_code == 200
        # the SDK honours retry-after-ms: with retries on, a refused call succeeds on its own
        retrying = _client(sb, retries=2)
        for _ in range(3):
            assert _ask(retrying, "gpt-4o-mini", max_tokens=1).status_code == 200


def test_snapshots_and_fine_tunes_count_under_their_base_model() -> None:
    with run_sandbox(job_seconds=0.3) as sb:
        client = _client(sb)
        training = client.files.create(file=("t.jsonl", training_jsonl(10)), purpose="fine-tune")
        job = client.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=training.id)
        tuned = wait_for_job(client, job.id).fine_tuned_model
        assert tuned is not None
        sb.set_limits({"gpt-4o-mini": {"rpm": 3}})
        for model in ("gpt-4o-mini", "gpt-4o-mini-2024-07-18", tuned):
            assert _ask(client, model, max_tokens=1).headers["x-ratelimit-limit-requests"] == "3"
        for model in ("gpt-4o-mini", tuned):
            with pytest.raises(openai.RateLimitError) as info:
                _ask(client, model, max_tokens=1)
            assert info.value.body["message"].startswith(  # type: ignore[index]
                "Rate limit reached for gpt-4o-mini in organization org-sandbox"
            )
        assert _ask(client, "gpt-4.1-nano", max_tokens=1).status_code == 200  # no limit there
        assert sb.stats()["rate_limited"] == {
            "total": 2,
            "models": {"gpt-4o-mini": 1, tuned: 1},
        }


def test_limits_change_live_and_reset_restores_the_start_up_ones() -> None:
    with run_sandbox(limits={"*": {"rpm": 1000}}) as sb:
        client = _client(sb)
        assert sb.limits() == {"*": {"rpm": 1000}}
        assert _ask(client, max_tokens=1).headers["x-ratelimit-limit-requests"] == "1000"
        shown = sb.set_limits(
            {"gpt-4.1-mini-2025-04-14": {"rpm": 1, "tpm": 5000}, "*": {"tpm": 9000}}
        )
        assert shown == {"gpt-4.1-mini": {"rpm": 1, "tpm": 5000}, "*": {"tpm": 9000}}
        assert sb.limits() == shown
        _ask(client, max_tokens=1)
        with pytest.raises(openai.RateLimitError):
            _ask(client, max_tokens=1)
        assert sb.set_limits({}) == {}
        for _ in range(3):  # no limits: no x-ratelimit-* headers, nothing refused
            raw = _ask(client, max_tokens=1)
            assert not [h for h in raw.headers if h.lower().startswith("x-ratelimit-")]
        sb.reset()
        assert sb.limits() == {"*": {"rpm": 1000}}
        stats = sb.stats()
        assert stats["rate_limited"] == {"total": 0, "models": {}}


def test_a_bad_limits_body_is_a_400_naming_the_model() -> None:
    with run_sandbox() as sb:
        for body, words in (
            ({"gpt-nope": {"rpm": 1}}, "unknown model 'gpt-nope'"),
            ({"gpt-4o-mini": {"rpm": 0}}, "rpm must be greater than or equal to 1 (got 0)"),
            ({"gpt-4o-mini": {"rqm": 5}}, "unknown field(s) rqm"),
            ({"gpt-4o": {"rpm": 5}, "gpt-4o-2024-08-06": {"rpm": 6}}, "keep one"),
        ):
            with pytest.raises(urllib.error.HTTPError) as info:
                sb.set_limits(body)
            assert info.value.code == 400
            message = json.loads(info.value.read())["error"]["message"]
            assert message.startswith("POST /sandbox/limits") and words in message, message
        assert sb.limits() == {}


def test_stats_count_rate_limited_answers_overall_and_per_model() -> None:
    with run_sandbox(limits={"gpt-4o-mini": {"rpm": 1}, "gpt-4.1-nano": {"rpm": 1}}) as sb:
        client = _client(sb)
        for model, times in (("gpt-4o-mini", 3), ("gpt-4.1-nano", 2)):
            for attempt in range(times):
                try:
                    _ask(client, model, max_tokens=1)
                except openai.RateLimitError:
                    assert attempt > 0
        stats = sb.stats()
    assert stats["rate_limited"] == {"total": 3, "models": {"gpt-4.1-nano": 1, "gpt-4o-mini": 2}}
    assert stats["statuses"]["429"] == 3 and stats["statuses"]["200"] == 2
    assert stats["faults_injected"] == {}


def test_organizations_have_their_own_limits_and_projects_their_own_caps(
    tmp_path: Path,
) -> None:
    accounts = tmp_path / "accounts.yaml"
    accounts.write_text(
        "accounts:\n"
        "  - {key: sk-test-alpha, organization: org-alpha, slug: alpha, project: proj_alpha}\n"
        "  - {key: sk-test-alpha-two, organization: org-alpha, slug: alpha, project: proj_two}\n"
        "  - {key: sk-test-beta, organization: org-beta, slug: beta}\n"
    )
    limits = {"gpt-4o-mini": {"rpm": 3}, "projects": {"proj_alpha": {"*": {"rpm": 1}}}}
    with run_sandbox(accounts=accounts, limits=limits) as sb:
        alpha, two, beta = (
            _client(sb, key) for key in ("sk-test-alpha", "sk-test-alpha-two", "sk-test-beta")
        )
        assert (
            _ask(alpha, "gpt-4o-mini", max_tokens=1).headers["x-ratelimit-remaining-requests"]
            == "0"
        )  # the tighter of the project's cap (1) and the organization's limit (3)
        with pytest.raises(openai.RateLimitError) as info:
            _ask(alpha, "gpt-4o-mini", max_tokens=1)
        assert "for gpt-4o-mini in project proj_alpha on requests" in str(info.value)
        _ask(two, "gpt-4o-mini", max_tokens=1)
        _ask(two, "gpt-4o-mini", max_tokens=1)
        with pytest.raises(openai.RateLimitError) as info:
            _ask(two, "gpt-4o-mini", max_tokens=1)
        assert "for gpt-4o-mini in organization org-alpha on requests" in str(info.value)
        for _ in range(3):
            _ask(beta, "gpt-4o-mini", max_tokens=1)
        assert sb.limits()["projects"] == {"proj_alpha": {"*": {"rpm": 1}}}


def test_limits_reach_a_subprocess_sandbox() -> None:
    with run_sandbox(in_process=False, limits={"gpt-4o-mini": {"rpm": 1}}, batch_seconds=0.5) as sb:
        assert sb.limits() == {"gpt-4o-mini": {"rpm": 1}}
        client = _client(sb)
        _ask(client, "gpt-4o-mini", max_tokens=1)
        with pytest.raises(openai.RateLimitError):
            _ask(client, "gpt-4o-mini", max_tokens=1)
