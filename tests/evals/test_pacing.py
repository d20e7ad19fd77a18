"""Pacing: a run at a small rate limit sends at the limit, not into it (few 429s, every sample
there), whether the limit's bucket starts full (after a quiet spell) or drained (in the middle
of other work); limits are learned from the answers; an endpoint without rate-limit headers is
not held back; a request larger than the whole limit fails alone instead of being retried.

Utilisation (how close to the ideal time a run comes) is measured by
`benchmarks/rate_limits.py`, not asserted here: wall-clock time on a loaded machine is noise.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import openai
import pytest
from fixtures.evals import TEST_KEY

from evals import Cache, EnvRouter, Question, RunSettings
from evals.runner._rate_limits import go_seconds, guess_family, read_refusal
from labmgr.sandbox import run_sandbox

MODEL = "gpt-4.1-mini"
SNAPSHOT = "gpt-4.1-mini-2025-04-14"


@pytest.fixture
def limited() -> Iterator[Any]:
    """A sandbox of this test's own, limits set by the test."""
    with run_sandbox() as handle:
        yield handle


@pytest.fixture
def served() -> Iterator[Any]:
    """A sandbox in a process of its own, answering concurrent requests in the order they reach
    it, as the API does (not the order they were sent)."""
    with run_sandbox(in_process=False) as handle:
        yield handle


def _client(sandbox: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=sandbox.base_url, api_key=TEST_KEY, max_retries=0)


def _drain_requests(sandbox: Any) -> None:
    """Send cheap requests until the requests bucket refuses one: the run starts drained."""
    client = _client(sandbox)
    for _ in range(10_000):
        try:
            client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
        except openai.RateLimitError:
            return
    raise AssertionError("the limit never refused a request")


def _drain_tokens(sandbox: Any, tpm: int) -> None:
    client = _client(sandbox)
    budget = (tpm - 100) // 8
    client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "hi"}], max_tokens=budget, n=8
    )


def _question(name: str, prompts: int, max_tokens: int = 5) -> Question:
    return Question.create(
        type="free_form",
        name=name,
        paraphrases=[f"Name a colour ({i})." for i in range(prompts)],
        max_tokens=max_tokens,
    )


def _settings(concurrency: int = 16) -> RunSettings:
    return RunSettings(max_concurrency=concurrency, request_timeout=10, progress=False, use_n=False)


def _rate_limited(sandbox: Any) -> int:
    return int(sandbox.stats()["rate_limited"]["total"])


def _chat_requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))


def _run_counting(sandbox: Any, tmp_path: Path, question: Question) -> tuple[int, int]:
    """Run `question` on `MODEL`, every sample answered; (requests sent, answered 429)."""
    refused_before, sent_before = _rate_limited(sandbox), _chat_requests(sandbox)
    df = question.df(
        {"g": [MODEL]},
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=sandbox.base_url),
        settings=_settings(concurrency=32),
    )
    assert df["error"].isna().all() and df["answer"].notna().all()
    sent = _chat_requests(sandbox) - sent_before
    refused = _rate_limited(sandbox) - refused_before
    assert sent == len(df) + refused
    return sent, refused


# A limit not touched for a minute holds a whole minute's worth: the run may send that much at
# once, and then only at the refill. Answers of that first burst come back out of order (one
# sent on a reused connection is counted before those opening new ones), and none of them may
# let a second burst through. Limits are scaled so the refill after the burst takes seconds.


def test_a_run_from_a_full_requests_bucket_has_at_most_2_percent_429s(
    served: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    served.set_limits({MODEL: {"rpm": 200}})
    sent, refused = _run_counting(served, tmp_path, _question("full-rpm", 210))
    assert refused <= 0.02 * sent, f"{refused} of {sent} requests were refused"


def test_a_run_from_a_full_tokens_bucket_has_at_most_2_percent_429s(
    served: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    # 33 tokens a request (a 13-token prompt, max_tokens 20): the bucket holds 200 of 210.
    served.set_limits({MODEL: {"tpm": 6_600}})
    sent, refused = _run_counting(served, tmp_path, _question("full-tpm", 210, max_tokens=20))
    assert refused <= 0.02 * sent, f"{refused} of {sent} requests were refused"


def test_a_run_at_a_drained_requests_limit_gets_every_sample_with_few_429s(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two models of one family share the limit (a snapshot counts under its alias).
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    limited.set_limits({MODEL: {"rpm": 300}})
    _drain_requests(limited)
    refused_before, sent_before = _rate_limited(limited), _chat_requests(limited)
    df = _question("paced", 12).df(
        {"g": [MODEL, SNAPSHOT]},
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=limited.base_url),
        settings=_settings(),
    )
    assert len(df) == 24 and df["error"].isna().all() and df["answer"].notna().all()
    sent = _chat_requests(limited) - sent_before
    refused = _rate_limited(limited) - refused_before
    # A client that does not pace sends most of these into the limit (see the benchmark:
    # llmcomp has 79% of its requests refused); labmgr keeps its copy of the bucket.
    assert sent == 24 + refused
    assert refused <= 3, f"{refused} of {sent} requests were refused"


def test_a_run_at_a_drained_tokens_limit_gets_every_sample_with_few_429s(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    limited.set_limits({MODEL: {"tpm": 12_000}})
    _drain_tokens(limited, 12_000)
    refused_before, sent_before = _rate_limited(limited), _chat_requests(limited)
    df = _question("tokens", 24, max_tokens=20).df(
        {"g": [MODEL]},
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=limited.base_url),
        settings=_settings(),
    )
    assert len(df) == 24 and df["error"].isna().all()
    sent = _chat_requests(limited) - sent_before
    refused = _rate_limited(limited) - refused_before
    assert sent == 24 + refused
    assert refused <= 3, f"{refused} of {sent} requests were refused"


def test_a_request_larger_than_the_tokens_limit_fails_alone_without_retries(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    limited.set_limits({MODEL: {"tpm": 1_000}})
    df = _question("too-large", 2, max_tokens=2_000).df(
        {"g": [MODEL]},
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=limited.base_url),
        settings=_settings(),
    )
    assert df["answer"].isna().all()
    assert df["error"].str.contains("Request too large").all()
    assert _chat_requests(limited) == 2  # one each: waiting cannot make them fit


def _stripping_handler(target: str) -> type[BaseHTTPRequestHandler]:
    """Forwards to the sandbox and drops every `x-ratelimit-*` header of the answer."""
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(target)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            upstream = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                data = response.read()
                self.send_response(response.status)
                for name, value in response.getheaders():
                    lower = name.lower()
                    if lower.startswith("x-ratelimit-") or lower in (
                        "content-length",
                        "transfer-encoding",
                        "connection",
                    ):
                        continue
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            finally:
                upstream.close()

        do_GET = do_POST = _forward

    return Handler


def test_an_endpoint_without_rate_limit_headers_is_not_held_to_one_request_at_a_time(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    limited.set_faults(latency_ms=100)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _stripping_handler(limited.base_url))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        df = _question("unpaced", 16).df(
            {"g": [MODEL]},
            cache=Cache(tmp_path / "cache"),
            router=EnvRouter(base_url=base_url),
            settings=_settings(),
        )
    finally:
        server.shutdown()
        server.server_close()
    assert df["error"].isna().all() and len(df) == 16
    # One probe first, then the rest at the concurrency limit: no pacing without headers.
    assert limited.stats()["peak_concurrency"] > 4


def test_the_next_question_of_a_process_is_sent_at_the_learned_pace_without_a_probe(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    cache = Cache(tmp_path / "cache")
    router = EnvRouter(base_url=limited.base_url)
    limited.set_faults(latency_ms=200)
    first = _question("first", 2).df(
        {"g": [MODEL]}, cache=cache, router=router, settings=_settings()
    )
    # Nothing known of the endpoint's limits yet: one request first, the other after it.
    assert first["error"].isna().all() and limited.stats()["peak_concurrency"] == 1
    limited.reset()
    limited.set_faults(latency_ms=200)
    second = Question.create(
        type="free_form", name="second", paraphrases=["Name a fruit.", "Name a tree."], max_tokens=5
    ).df(
        {"g": [MODEL]},
        cache=cache,
        router=EnvRouter(base_url=limited.base_url),
        settings=_settings(),
    )
    # The limits learned from the first question's answers hold for the next one (a new
    # fetch, a new router): both requests go at once.
    assert second["error"].isna().all() and limited.stats()["peak_concurrency"] == 2


def test_rate_limit_wording_is_read_as_the_api_writes_it() -> None:
    refusal = read_refusal(
        "Rate limit reached for gpt-4.1-mini in organization org-abc on tokens per min (TPM): "
        "Limit 200000, Used 199620, Requested 1091. Please try again in 213ms. Visit "
        "https://platform.openai.com/account/rate-limits to learn more."
    )
    assert refusal is not None
    assert (refusal.family, refusal.dimension, refusal.per_minute) == (
        "gpt-4.1-mini",
        "tokens",
        True,
    )
    assert (refusal.limit, refusal.used, refusal.requested) == (200_000, 199_620, 1_091)
    assert refusal.wait == pytest.approx(0.213)
    daily = read_refusal(
        "Rate limit reached for gpt-4o in project proj_x on requests per day (RPD): "
        "Limit 10000, Used 10000, Requested 1. Please try again in 1m12.5s."
    )
    assert daily is not None and not daily.per_minute and daily.wait == pytest.approx(72.5)
    assert read_refusal("You exceeded your current quota") is None
    assert go_seconds("6m0s") == 360 and go_seconds("19.97s") == pytest.approx(19.97)
    assert go_seconds("0s") == 0 and go_seconds("soon") is None


def test_a_fine_tune_and_a_snapshot_are_first_paced_with_their_base_alias() -> None:
    assert guess_family("ft:gpt-4.1-mini-2025-04-14:org:suffix:abc123") == "gpt-4.1-mini"
    assert guess_family("ft:gpt-4o-mini-2024-07-18:org::x:ckpt-step-10") == "gpt-4o-mini"
    assert guess_family("gpt-4.1-2025-04-14") == "gpt-4.1"
    assert guess_family("o4-mini") == "o4-mini"


def test_a_snapshot_the_api_counts_under_an_alias_it_does_not_look_like_shares_its_pace(
    limited: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `gpt-3.5-turbo-0125` has no date to strip: only a 429 naming `gpt-3.5-turbo` tells the
    # run that both models draw on one limit; from then on the snapshot's calls, those waiting
    # behind the refused one too, are paced with the alias's.
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    alias, snapshot = "gpt-3.5-turbo", "gpt-3.5-turbo-0125"
    assert guess_family(snapshot) != alias
    limited.set_limits({alias: {"rpm": 60}})  # slow enough that both first requests are refused
    client = _client(limited)
    for _ in range(10_000):  # drain the shared bucket
        try:
            client.chat.completions.create(
                model=alias, messages=[{"role": "user", "content": "hi"}], max_tokens=1
            )
        except openai.RateLimitError:
            break
    refused_before, sent_before = _rate_limited(limited), _chat_requests(limited)
    df = _question("aliased", 5).df(
        {"g": [alias, snapshot]},
        cache=Cache(tmp_path / "cache"),
        router=EnvRouter(base_url=limited.base_url),
        settings=_settings(),
    )
    assert len(df) == 10 and df["error"].isna().all() and df["answer"].notna().all()
    sent = _chat_requests(limited) - sent_before
    refused = _rate_limited(limited) - refused_before
    assert sent == 10 + refused
    assert refused <= 3, f"{refused} of {sent} requests were refused"
