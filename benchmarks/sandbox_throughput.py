"""Requests per second the sandbox serves, to a plain async HTTP client and to AsyncOpenAI.

The sandbox runs as a subprocess (`run_sandbox(in_process=False)`), so its CPU is separate
from the client's; on a small machine both still share the cores. A minimal
starlette/uvicorn JSON endpoint, served the same way, is measured in the same run as the
baseline, and each sandbox figure is printed with its ratio to it. Last, the plain-client
rows at 0 ms are measured with rate limits set high enough never to refuse and without
limits, alternating, and the median with limits is printed with its ratio to the median
without (what enforcing limits costs).

    python benchmarks/sandbox_throughput.py [--requests 2000] [--concurrency 20 100 500]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable

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
            rates: dict[bool, list[float]] = {False: [], True: []}
            failures = 0
            for _ in range(3):
                for limited in (False, True):
                    sb.set_limits(NEVER_REACHED if limited else {})
                    rate, failed = asyncio.run(
                        plain_client(sb.base_url + "/chat/completions", CHAT_BODY, args.requests, c)
                    )
                    rates[limited].append(rate)
                    failures += failed
            without, with_limits = (statistics.median(rates[k]) for k in (False, True))
            _row("sandbox chat", "aiohttp", 0, c, without, 1.0, 0)
            _row("sandbox + limits", "aiohttp", 0, c, with_limits, with_limits / without, failures)
        stats = sb.stats()
        print(f"peak concurrency seen by the sandbox: {stats['peak_concurrency']}")
        print(f"responses by status: {stats['statuses']}")


if __name__ == "__main__":
    main()
