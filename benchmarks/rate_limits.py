"""Running at a rate limit: labmgr's pacing against llmcomp, four starts, one run.

    python benchmarks/rate_limits.py                  # both tools, all four starts
    python benchmarks/rate_limits.py --skip-llmcomp   # labmgr only
    python benchmarks/rate_limits.py --requests 200 --scenarios full-rpm,full-tpm

Scenarios: `--requests` requests of gpt-4.1-mini (one per sample), bound by a requests limit
(`rpm`, `max_tokens` 16) or a tokens limit (`tpm`, about 120 tokens a request: prompt plus
`max_tokens` 100, requests unlimited), starting from a full bucket or a drained one:

  full     the limit was not touched for a minute: the bucket holds a quarter of the
           requests less than the run needs (limit = 3/4 of them a minute), so three
           quarters may go at once and the rest at the refill, 20 s ideal
  drained  right before the tool is told to go, a burst of cheap requests empties the
           bucket (until the sandbox refuses), as in the middle of a long run or with the
           organization's other work going on; limit = 5 times the requests a minute, so
           12 s ideal

The ideal wall time is what the limit admitted beyond the level at go, over the refill per
second; the 429 share is the sandbox's `rate_limited` answers over every chat request the
tool sent. Each tool runs in a fresh process that imports everything before it is told to
go; llmcomp 1.6.0 is installed from PyPI into its own virtual environment
(`_llmcomp_venv.py`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _llmcomp_venv import default_venv, llmcomp_python

ROOT = Path(__file__).resolve().parent.parent
API_KEY = "sk-test-bench"
MODEL = "gpt-4.1-mini"
CONCURRENCY = 100
TOKENS_PER_REQUEST = 120
"""About what one request of the `tpm` scenarios counts (a short prompt and `max_tokens` 100)."""
MAX_TOKENS = {"rpm": 16, "tpm": 100}
PER_MINUTE = {"full": 0.75, "drained": 5.0}
"""The limit per minute, in requests of the run."""
SCENARIOS = [f"{start}-{bound}" for start in ("full", "drained") for bound in ("rpm", "tpm")]


def _limits(scenario: str, requests: int) -> dict[str, Any]:
    start, bound = scenario.split("-")
    per_minute = PER_MINUTE[start] * requests
    if bound == "tpm":
        return {MODEL: {"tpm": round(per_minute * TOKENS_PER_REQUEST)}}
    return {MODEL: {"rpm": round(per_minute)}}


def _prompts(count: int) -> list[str]:
    return [f"Name a colour you like and say why ({i})." for i in range(count)]


# ---- workers (a fresh process each; llmcomp's in its own venv) ------------------------------


def _ready_then_go() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def _worker_labmgr(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["OPENAI_API_KEY"] = API_KEY
    from evals import Cache, EnvRouter, Question, RunSettings
    from evals.runner import fetch

    assert fetch  # the runner imported before the clock starts
    question = Question.create(
        type="free_form",
        name="bench",
        paraphrases=_prompts(args.requests),
        temperature=1.0,
        max_tokens=args.max_tokens,
    )
    settings = RunSettings(max_concurrency=CONCURRENCY, progress=False)
    router = EnvRouter(base_url=args.base_url)
    _ready_then_go()
    wall = time.perf_counter()
    df = question.df(
        {"all": [MODEL]}, cache=Cache(args.cache_dir), router=router, settings=settings
    )
    return {
        "wall": time.perf_counter() - wall,
        "rows": len(df),
        "errors": int(df["error"].notna().sum()),
    }


def _worker_llmcomp(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["OPENAI_API_KEY"] = API_KEY
    from llmcomp import Config, Question

    Config.url_key_pairs = [(args.base_url, API_KEY, "OPENAI_API_KEY")]
    Config.cache_dir = args.cache_dir
    Config.max_workers = CONCURRENCY
    question = Question.create(
        type="free_form",
        name="bench",
        paraphrases=_prompts(args.requests),
        temperature=1.0,
        max_tokens=args.max_tokens,
    )
    _ready_then_go()
    wall = time.perf_counter()
    df = question.df({"all": [MODEL]})
    return {
        "wall": time.perf_counter() - wall,
        "rows": len(df),
        "errors": int((df["answer"] == "").sum()),
    }


# ---- the limit: draining it and reading what was admitted -------------------------------------


async def _drain(base_url: str, dimension: str, limit: float) -> tuple[float, float]:
    """Empty the limited bucket of `MODEL`; returns the level the last answer reported and
    the time it came (`time.monotonic`)."""
    import aiohttp

    url = base_url.rstrip("/") + "/chat/completions"
    headers = {"Authorization": f"Bearer {API_KEY}", "Content-Type": "application/json"}
    last: dict[str, float] = {"level": limit, "when": time.monotonic()}
    refused = False

    async def one(session: aiohttp.ClientSession, budget: int, n: int) -> None:
        nonlocal refused
        body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
        body.update({"max_tokens": budget, "n": n})
        async with session.post(url, json=body, headers=headers) as response:
            await response.read()
            value = response.headers.get(f"x-ratelimit-remaining-{dimension}")
            if value is not None:
                last["level"], last["when"] = float(value), time.monotonic()
            if response.status == 429:
                refused = True

    connector = aiohttp.TCPConnector(limit=64)
    async with aiohttp.ClientSession(connector=connector) as session:
        if dimension == "tokens":  # a few requests with huge budgets take the tokens out
            while not refused:
                budget = max(1, min(32_000, int(last["level"] / 8) - 50))
                await one(session, budget, 8)
                if last["level"] < 400:
                    break
        else:
            while not refused:
                await asyncio.gather(*(one(session, 1, 1) for _ in range(256)))
    return last["level"], last["when"]


def _admitted(sandbox: Any, dimension: str, budget: int) -> tuple[float, int, int]:
    """(units the limit let through, chat requests, rate-limited answers) so far."""
    stats = sandbox.stats()
    row = stats["models"].get(MODEL, {})
    answered = int(row.get("requests", 0))
    units = (
        float(answered)
        if dimension == "requests"
        else float(row.get("prompt_tokens", 0) + answered * budget)
    )
    return units, int(stats["requests"].get("chat.completions", 0)), stats["rate_limited"]["total"]


def _run(
    sandbox: Any, python: Path | str, tool: str, scenario: str, requests: int, cache_dir: Path
) -> dict[str, Any]:
    start, bound = scenario.split("-")
    limits = _limits(scenario, requests)
    dimension = "requests" if bound == "rpm" else "tokens"
    limit = float(limits[MODEL][bound])
    max_tokens = MAX_TOKENS[bound]
    sandbox.reset()
    sandbox.set_limits(limits)  # a new limit starts with its buckets full
    command = [str(python), str(Path(__file__).resolve()), "--worker", tool]
    command += ["--base-url", sandbox.base_url, "--cache-dir", str(cache_dir)]
    command += ["--requests", str(requests), "--max-tokens", str(max_tokens)]
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    if tool == "labmgr":
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    worker = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    assert worker.stdin is not None and worker.stdout is not None
    line = worker.stdout.readline()
    if line.strip() != b"ready":
        raise RuntimeError(f"{tool} worker failed:\n{worker.communicate()[1].decode()[-3000:]}")
    level, when = limit, time.monotonic()
    if start == "drained":
        level, when = asyncio.run(_drain(sandbox.base_url, dimension, limit))
    units_before, requests_before, limited_before = _admitted(sandbox, dimension, max_tokens)
    rate = limit / 60.0
    go = time.monotonic()
    level_at_go = min(limit, level + (go - when) * rate)
    worker.stdin.write(b"go\n")
    worker.stdin.flush()
    out, err = worker.communicate()
    if worker.returncode != 0:
        raise RuntimeError(f"{tool} worker failed:\n{err.decode()[-3000:]}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    units, sent, limited = _admitted(sandbox, dimension, max_tokens)
    sent -= requests_before
    limited -= limited_before
    ideal = max(0.0, units - units_before - level_at_go) / rate
    result.update(
        tool=tool,
        scenario=scenario,
        limit=limit,
        level_at_go=level_at_go,
        ideal=ideal,
        sent=sent,
        rate_limited=limited,
        share_429=limited / sent if sent else 0.0,
    )
    over = result["wall"] / ideal - 1 if ideal else float("nan")
    print(
        f"{scenario:<11} {tool:<8} 429s {limited:>5} of {sent:>5} requests "
        f"({result['share_429']:5.1%})  wall {result['wall']:6.2f} s, ideal {ideal:5.2f} s "
        f"({over:+.0%})  rows {result['rows']} errors {result['errors']}  "
        f"(limit {limit:.0f} {dimension}/min, level at go {level_at_go:.0f})",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=400, help="Requests per run.")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="Comma-separated.")
    parser.add_argument("--worker", choices=["labmgr", "llmcomp"], help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    parser.add_argument("--max-tokens", type=int, default=16, help=argparse.SUPPRESS)
    parser.add_argument("--skip-llmcomp", action="store_true")
    parser.add_argument("--repeat", type=int, default=1, help="Runs per tool and scenario.")
    parser.add_argument("--llmcomp-venv", type=Path, default=default_venv())
    parser.add_argument("--out", type=Path, help="Write the results as JSON here.")
    args = parser.parse_args()
    if args.worker == "labmgr":
        print(json.dumps(_worker_labmgr(args)))
        return
    if args.worker == "llmcomp":
        print(json.dumps(_worker_llmcomp(args)))
        return
    scenarios = args.scenarios.split(",")
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenarios {sorted(unknown)}; choose from {SCENARIOS}")

    sys.path.insert(0, str(ROOT))
    from labmgr.sandbox import run_sandbox

    tools: list[tuple[str, Path | str]] = [("labmgr", sys.executable)]
    if not args.skip_llmcomp:
        tools.append(("llmcomp", llmcomp_python(args.llmcomp_venv)))
    results = []
    with tempfile.TemporaryDirectory() as scratch, run_sandbox(in_process=False) as sandbox:
        print(f"sandbox at {sandbox.base_url}; load average {os.getloadavg()[0]:.1f}")
        for scenario in scenarios:
            for attempt in range(args.repeat):
                for tool, python in tools:
                    cache = Path(scratch) / f"{scenario}-{tool}-{attempt}"
                    results.append(_run(sandbox, python, tool, scenario, args.requests, cache))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
