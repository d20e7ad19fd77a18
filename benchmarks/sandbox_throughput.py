"""Requests per second the sandbox serves, to a plain async HTTP client and to AsyncOpenAI.

The sandbox runs as a subprocess (`run_sandbox(in_process=False)`), so its CPU is separate
from the client's; on a small machine both still share the cores. A minimal
starlette/uvicorn JSON endpoint, served the same way, is measured in the same run as the
baseline, and each sandbox figure is printed with its ratio to it. Last, the plain-client
rows at 0 ms are measured with rate limits set high enough never to refuse and without
limits, alternating, and the median with limits is printed with its ratio to the median
without (what enforcing limits costs).

Finally the app's own time per chat request is measured in process, without HTTP (far
less noisy on a shared machine), without and with limits. With `--against DIR` (a source
tree of an earlier labmgr) the plain-client rows at 0 ms and the app's time are also
measured for that version's sandbox, alternating with this one, to compare them.

    python benchmarks/sandbox_throughput.py [--requests 2000] [--concurrency 20 100 500]
                                            [--against DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiohttp
from openai import AsyncOpenAI

from labmgr.sandbox import run_sandbox

CHAT_BODY = {
    "model": "gpt-4o-mini",
    "messages": [
        {"role": "system", "content": "Answer with one word."},
        {"role": "user", "content": "Is the sky blue? Answer yes or no."},
    ],
    "max_tokens": 5,
    "temperature": 1.0,
    "logprobs": True,
    "top_logprobs": 5,
}

NEVER_REACHED = {"*": {"rpm": 1_000_000_000, "tpm": 1_000_000_000_000}}
"""Limits on every model that no run here comes near: the limiter's cost, never a 429."""

APP_COST = """
import asyncio, json, sys, time
from labmgr.sandbox import create_app
limits = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
if limits:
    from labmgr.sandbox import SandboxConfig
    app = create_app(SandboxConfig.of(limits=limits))
else:
    app = create_app()
body = sys.argv[1].encode()
scope = {"type": "http", "method": "POST", "path": "/v1/chat/completions",
         "raw_path": b"/v1/chat/completions", "query_string": b"",
         "headers": [(b"authorization", b"Bearer sk-test"), (b"content-type", b"application/json")]}
async def receive():
    return {"type": "http.request", "body": body, "more_body": False}
async def send(message):
    pass
async def run(n):
    for _ in range(n):
        await app(scope, receive, send)
def timed(n):
    start = time.perf_counter(); asyncio.run(run(n)); return time.perf_counter() - start
timed(500)
print(min(timed(3000) for _ in range(5)) / 3000 * 1e6)
"""
"""The app's own time per chat request, in process (no HTTP): best of 5 runs of 3,000."""


def app_cost_us(limits: dict | None = None, source: Path | None = None) -> float:
    """Microseconds the sandbox app spends per chat request (from `source` if given)."""
    command = [sys.executable, "-c", APP_COST, json.dumps(CHAT_BODY)]
    if limits:
        command.append(json.dumps(limits))
    env = dict(os.environ, PYTHONPATH=str(source)) if source else None
    done = subprocess.run(
        command, cwd=source, env=env, capture_output=True, text=True, check=True, timeout=300
    )
    return float(done.stdout.strip().splitlines()[-1])


BASELINE_APP = """
import socket, sys, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route

async def hello(request):
    await request.body()
    return JSONResponse({"ok": True, "choices": [{"index": 0, "text": "Hello."}]})

app = Starlette(routes=[Route("/v1/hello", hello, methods=["POST"])])
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); sock.listen(4096)
print(f"http://127.0.0.1:{sock.getsockname()[1]}/v1", flush=True)
uvicorn.Server(uvicorn.Config(app, loop="uvloop", http="httptools", log_level="warning",
                              access_log=False, lifespan="off")).run(sockets=[sock])
"""


async def _drive(
    call: Callable[[], Awaitable[None]], requests: int, concurrency: int
) -> tuple[float, int]:
    """Run `requests` calls with `concurrency` workers; (requests/s, failures)."""
    remaining = requests
    failures = 0

    async def worker() -> None:
        nonlocal remaining, failures
        while remaining > 0:
            remaining -= 1
            try:
                await call()
            except Exception:
                failures += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return requests / (time.perf_counter() - started), failures


async def plain_client(url: str, body: dict, requests: int, concurrency: int) -> tuple[float, int]:
    connector = aiohttp.TCPConnector(limit=concurrency)
    headers = {"Authorization": "Bearer sk-test-bench"}
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def call() -> None:
            async with session.post(url, json=body) as response:
                await response.read()
                if response.status != 200:
                    raise RuntimeError(response.status)

        await call()  # warm-up
        return await _drive(call, requests, concurrency)


async def openai_client(base_url: str, requests: int, concurrency: int) -> tuple[float, int]:
    async with AsyncOpenAI(base_url=base_url, api_key="sk-test-bench", max_retries=0) as client:

        async def call() -> None:
            await client.chat.completions.create(**CHAT_BODY)  # type: ignore[call-overload]

        await call()
        return await _drive(call, requests, concurrency)


def _row(
    server: str, client: str, latency: float, conc: int, rate: float, ratio: float, failed: int
) -> None:
    print(f"{server:<20}{client:<13}{latency:>8.0f}{conc:>6}{rate:>9.0f}{ratio:>7.2f}{failed:>6}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests per plain-client run")
    parser.add_argument(
        "--openai-requests", type=int, default=1000, help="requests per AsyncOpenAI run"
    )
    parser.add_argument("--concurrency", type=int, nargs="+", default=[20, 100, 500])
    parser.add_argument("--latencies", type=float, nargs="+", default=[0.0, 50.0])
    parser.add_argument(
        "--against",
        type=Path,
        help="a source tree of an earlier labmgr (e.g. `git archive <commit> labmgr | tar -x "
        "-C DIR`): alternate plain-client runs against its sandbox and this one",
    )
    args = parser.parse_args()

    command = [sys.executable, "-c", BASELINE_APP]
    baseline = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert baseline.stdout is not None
        baseline_url = baseline.stdout.readline().strip()
        rates = {
            c: asyncio.run(plain_client(baseline_url + "/hello", {}, args.requests, c))
            for c in args.concurrency
        }
    finally:
        baseline.terminate()
        baseline.wait()
    print(
        f"{'server':<20}{'client':<13}{'latency':>8}{'conc':>6}{'req/s':>9}{'ratio':>7}{'fail':>6}"
    )
    for c, (rate, failed) in rates.items():
        _row("starlette baseline", "aiohttp", 0, c, rate, 1.0, failed)

    with run_sandbox(in_process=False) as sb:
        for latency in args.latencies:
            sb.set_faults(latency_ms=latency)
            for c in args.concurrency:
                # With latency, throughput is bounded by concurrency / latency: fewer requests.
                n = args.requests if latency == 0 else min(args.requests, max(500, c * 10))
                n_sdk = args.openai_requests if latency == 0 else min(args.openai_requests, n)
                rate, failed = asyncio.run(
                    plain_client(sb.base_url + "/chat/completions", CHAT_BODY, n, c)
                )
                base = rates[c][0] if latency == 0 and c in rates else float("nan")
                _row("sandbox chat", "aiohttp", latency, c, rate, rate / base, failed)
                rate, failed = asyncio.run(openai_client(sb.base_url, n_sdk, c))
                _row("sandbox chat", "AsyncOpenAI", latency, c, rate, rate / base, failed)
        sb.set_faults(latency_ms=0.0)
        print("\nlimits set (never reached) vs none, alternating, median of 3 runs each")
        for c in args.concurrency:
            paired: dict[bool, list[float]] = {False: [], True: []}
            failures = 0
            for _ in range(3):
                for limited in (False, True):
                    sb.set_limits(NEVER_REACHED if limited else {})
                    rate, failed = asyncio.run(
                        plain_client(sb.base_url + "/chat/completions", CHAT_BODY, args.requests, c)
                    )
                    paired[limited].append(rate)
                    failures += failed
            without, with_limits = (statistics.median(paired[k]) for k in (False, True))
            _row("sandbox chat", "aiohttp", 0, c, without, 1.0, 0)
            _row("sandbox + limits", "aiohttp", 0, c, with_limits, with_limits / without, failures)
        sb.set_limits({})
        if args.against:
            _against(args.against, sb.base_url, args.concurrency, args.requests)
        stats = sb.stats()
        print(f"peak concurrency seen by the sandbox: {stats['peak_concurrency']}")
        print(f"responses by status: {stats['statuses']}")
    print("\nthe app's own time per chat request, in process (best of 5 x 3,000), alternating")
    costs: dict[str, list[float]] = {"none": [], "limits": [], "earlier": []}
    for _ in range(3):
        costs["none"].append(app_cost_us())
        costs["limits"].append(app_cost_us(NEVER_REACHED))
        if args.against:
            costs["earlier"].append(app_cost_us(source=args.against))
    reference = statistics.median(costs["earlier"] or costs["none"])
    for name, label in (
        ("earlier", "earlier sandbox"),
        ("none", "sandbox"),
        ("limits", "sandbox + limits"),
    ):
        if costs[name]:
            cost = statistics.median(costs[name])
            print(f"{label:<20}{cost:>8.1f} µs/request  ratio {cost / reference:.2f}")


def _against(source: Path, base_url: str, concurrency: list[int], requests: int) -> None:
    """Alternate runs against this sandbox and one served from an earlier source tree."""
    env = dict(os.environ, PYTHONPATH=str(source))
    command = [sys.executable, "-m", "labmgr", "sandbox", "serve", "--port", "0"]
    other = subprocess.Popen(command, cwd=source, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout is not None
        other_url = other.stdout.readline().strip()
        print(f"\nthis sandbox vs the one in {source}, alternating, median of 5 runs each")
        for c in concurrency:
            runs: dict[str, list[float]] = {base_url: [], other_url: []}
            for _ in range(5):
                for url, rates in runs.items():
                    rate, failed = asyncio.run(
                        plain_client(url + "/chat/completions", CHAT_BODY, requests, c)
                    )
                    assert failed == 0, f"{failed} requests failed against {url}"
                    rates.append(rate)
            before, after = statistics.median(runs[other_url]), statistics.median(runs[base_url])
            _row("earlier sandbox", "aiohttp", 0, c, before, 1.0, 0)
            _row("this sandbox", "aiohttp", 0, c, after, after / before, 0)
    finally:
        other.terminate()
        other.wait()


if __name__ == "__main__":
    main()
