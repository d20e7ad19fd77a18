"""Running at a rate limit: labmgr's pacing against llmcomp, same sandbox limits, one run.

    python benchmarks/rate_limits.py                  # both tools, RPM- and TPM-bound
    python benchmarks/rate_limits.py --skip-llmcomp   # labmgr only

Scenarios (labmgr runs at the limit, not into it):
  rpm  600 requests (one per sample) of gpt-4.1-mini under 3,000 requests per minute
  tpm  600 requests of about 120 tokens each (prompt + max_tokens 100) under 360,000
       tokens per minute (requests unlimited)

Each run starts from a drained limit, as in the middle of a long run or with other work of
the organization going on: right before the tool is told to go, a burst of cheap requests
empties the bucket (until the sandbox refuses), so what the tool gets is the refill. The
ideal is then N / (refill per second) for requests, and the tokens admitted over the
tokens' refill; utilisation is what the limit let through in the tool's wall time that the
tool used: admitted / (level at go + rate x wall time). The 429 share is the sandbox's
`rate_limited` answers over every chat request the tool sent. Each tool runs in a fresh
process that imports everything before it is told to go; llmcomp is installed from PyPI
into its own virtual environment as `benchmarks/eval_throughput.py` does.
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
SCENARIOS: dict[str, dict[str, Any]] = {
    "rpm": {"limits": {MODEL: {"rpm": 3000}}, "requests": 600, "max_tokens": 16},
    "tpm": {"limits": {MODEL: {"tpm": 360_000}}, "requests": 600, "max_tokens": 100},
}


def _prompts(count: int) -> list[str]:
    return [f"Name a colour you like and say why ({i})." for i in range(count)]


# ---- workers (a fresh process each; llmcomp's in its own venv) ------------------------------


def _ready_then_go() -> None:
    print("ready", flush=True)
    sys.stdin.readline()


def _worker_labmgr(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["OPENAI_API_KEY"] = API_KEY
    from evals import Cache, EnvRouter, Question, RunSettings
    from evals.runner import run_blocking, run_works

    assert run_blocking and run_works  # the runner imported before the clock starts
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


async def _drain(base_url: str, limits: dict[str, Any]) -> tuple[str, float, float, float]:
    """Empty the limited bucket of `MODEL`; returns (dimension, limit, level, when): the level
    the last answer reported and the time it came (`time.monotonic`)."""
    import aiohttp

    dimension = "requests" if "rpm" in limits[MODEL] else "tokens"
    limit = float(limits[MODEL]["rpm" if dimension == "requests" else "tpm"])
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
    return dimension, limit, last["level"], last["when"]


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
    sandbox: Any, python: Path | str, tool: str, scenario: str, cache_dir: Path
) -> dict[str, Any]:
    spec = SCENARIOS[scenario]
    sandbox.reset()
    sandbox.set_limits(spec["limits"])
    command = [str(python), str(Path(__file__).resolve()), "--worker", tool]
    command += ["--base-url", sandbox.base_url, "--cache-dir", str(cache_dir)]
    command += ["--requests", str(spec["requests"]), "--max-tokens", str(spec["max_tokens"])]
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
    dimension, limit, level, when = asyncio.run(_drain(sandbox.base_url, spec["limits"]))
    units_before, requests_before, limited_before = _admitted(
        sandbox, dimension, spec["max_tokens"]
    )
    rate = limit / 60.0
    go = time.monotonic()
    level_at_go = min(limit, level + (go - when) * rate)
    worker.stdin.write(b"go\n")
    worker.stdin.flush()
    out, err = worker.communicate()
    if worker.returncode != 0:
        raise RuntimeError(f"{tool} worker failed:\n{err.decode()[-3000:]}")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    units, requests, limited = _admitted(sandbox, dimension, spec["max_tokens"])
    admitted = units - units_before
    sent = requests - requests_before
    result.update(
        tool=tool,
        scenario=scenario,
        dimension=dimension,
        level_at_go=level_at_go,
        admitted=admitted,
        ideal=max(0.0, admitted - level_at_go) / rate,
        utilisation=admitted / (level_at_go + rate * result["wall"]),
        sent=sent,
        rate_limited=limited - limited_before,
        share_429=(limited - limited_before) / sent if sent else 0.0,
    )
    print(
        f"{scenario} {tool:<8} wall {result['wall']:6.2f} s (ideal {result['ideal']:5.2f} s)  "
        f"utilisation {result['utilisation']:6.1%}  429s {result['rate_limited']:>5} of "
        f"{sent:>5} requests ({result['share_429']:.1%})  rows {result['rows']} "
        f"errors {result['errors']}  (level at go {level_at_go:.0f} {dimension})",
        flush=True,
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=["labmgr", "llmcomp"])
    parser.add_argument("--base-url")
    parser.add_argument("--cache-dir")
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--skip-llmcomp", action="store_true")
    parser.add_argument("--scenarios", default="rpm,tpm")
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

    sys.path.insert(0, str(ROOT))
    from labmgr.sandbox import run_sandbox

    tools: list[tuple[str, Path | str]] = [("labmgr", sys.executable)]
    if not args.skip_llmcomp:
        tools.append(("llmcomp", llmcomp_python(args.llmcomp_venv)))
    results = []
    with tempfile.TemporaryDirectory() as scratch, run_sandbox(in_process=False) as sandbox:
        print(f"sandbox at {sandbox.base_url}; load average {os.getloadavg()[0]:.1f}")
        for scenario in args.scenarios.split(","):
            for attempt in range(args.repeat):
                for tool, python in tools:
                    cache = Path(scratch) / f"{scenario}-{tool}-{attempt}"
                    results.append(_run(sandbox, python, tool, scenario, cache))
    if args.out:
        args.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
