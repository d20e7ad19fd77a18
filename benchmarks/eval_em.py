"""The Emergent-Misalignment workload: labmgr against llmcomp, same sandbox, one run.

    python benchmarks/eval_em.py                         # everything (a few minutes)
    python benchmarks/eval_em.py --skip-llmcomp
    python benchmarks/eval_em.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

The real question file (24 questions, two 0-100 rating judges: one judge request per
answer) over 7 sandbox models (a base model and 6 fine-tunes) at 50 samples: 8,400 samples
and their 16,800 judge verdicts.

  fresh       each tool with an empty cache, in a fresh process, after its imports: labmgr
              as a `df()` loop and as one `ask_questions` over all 24 questions (every
              answer in one fetch, every judge in one more), llmcomp 1.6.0 (installed from
              PyPI into its own venv on first use) as its `df()` loop. Target: labmgr ≥ 5×
              faster. Each labmgr process then re-runs all 24 questions warm, in the same
              process: the `df()` loop again and `ask_questions` again. Target: ≤ 0.3 s.
  reanalysis  a new `python -c` process that imports the tool and reads all 24 frames from
              the full cache, timed from outside (interpreter start and imports included),
              the fastest of `--repeat`. Target: labmgr no slower than llmcomp.
  pg          the same re-analysis with labmgr's cache copied to PostgreSQL (a database made
              for the run on the server of --pg-url) against the SQLite cache.

The sandbox runs in its own process (50 ms latency), with rate limits far above the workload
so that no tool is paced or refused; a fresh run's line gives the sandbox's CPU time too.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from _llmcomp_venv import default_venv, llmcomp_python
from _processes import cpu_seconds, sandbox_pid
from _sandbox_models import sandbox_fine_tunes

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT.parent / "shared" / "data" / "em_first_plot_questions.yaml"
API_KEY = "sk-test-bench"
CONCURRENCY = 100
BASE = "gpt-4o-mini"
FINE_TUNES = 6
UNBOUND_LIMITS = {"*": {"rpm": 100_000_000, "tpm": 100_000_000_000}}
FRESH_TARGET = 5.0
WARM_TARGET_S = 0.3


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


# ---- the re-analysis: what a user runs in a new process on a full cache ---------------------

# Each reads its arguments (cache, base URL, samples, groups as JSON, and the question file
# or llmcomp's question spec) and prints one JSON line: rows, errors and the process's peak
# RSS, and how long its imports and the rest took. The orchestrator times the whole process.

_ARGS = """
import time
started = time.perf_counter()
import json, resource, sys
cache, url, samples, groups, path = sys.argv[1:]
samples, groups = int(samples), json.loads(groups)
rows = errors = 0
"""
_PRINT = """
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
work = time.perf_counter() - imported
result = {"rows": rows, "errors": errors, "peak_mb": peak, "work": work}
print(json.dumps({**result, "imports": imported - started}))
"""

LABMGR_LOOP = (
    _ARGS
    + """
from evals import Cache, EnvRouter, RunSettings, load_questions
imported = time.perf_counter()
cache = Cache(cache)
router = EnvRouter(base_url=url)
settings = RunSettings(progress=False)
for question in load_questions(path).values():
    question = question.model_copy(update={"samples_per_paraphrase": samples})
    frame = question.df(groups, cache=cache, router=router, settings=settings)
    rows += len(frame)
    errors += int(frame["error"].notna().sum())
"""
    + _PRINT
)

LABMGR_TOGETHER = (
    _ARGS
    + """
from evals import Cache, EnvRouter, RunSettings, load_questions
from evals.answers import ask_questions
from evals.runner import run_context
imported = time.perf_counter()
ctx = run_context(
    cache=Cache(cache), router=EnvRouter(base_url=url), settings=RunSettings(progress=False)
)
questions = [
    question.model_copy(update={"samples_per_paraphrase": samples})
    for question in load_questions(path).values()
]
for frame in ask_questions(questions, groups, ctx)[0].values():
    rows += len(frame)
    errors += int(frame["error"].notna().sum())
"""
    + _PRINT
)

LLMCOMP_LOOP = (
    _ARGS
    + """
from llmcomp import Config, Question
imported = time.perf_counter()
Config.url_key_pairs = [(url, "sk-test-bench", "OPENAI_API_KEY")]
Config.cache_dir = cache
for entry in json.load(open(path)):
    judges = {
        name: Question.create(
            type="rating_judge",
            name=f"{entry['name']}-{name}",
            model=judge["model"],
            paraphrases=[judge["template"]],
        )
        for name, judge in entry["judges"].items()
    }
    options = {"system": entry["system"]} if entry["system"] else {}
    question = Question.create(
        type="free_form",
        name=entry["name"],
        paraphrases=entry["paraphrases"],
        samples_per_paraphrase=samples,
        judges=judges,
        **options,
    )
    frame = question.df(groups)
    rows += len(frame)
    errors += int((frame["answer"] == "").sum())
"""
    + _PRINT
)


# ---- fresh workers (each in a fresh process; the llmcomp one in llmcomp's venv) --------------


def _worker_labmgr(args: argparse.Namespace) -> dict[str, Any]:
    """A fresh run (the `df()` loop, or one `ask_questions` with `--together`), then the two
    warm re-runs of all 24 questions in this process."""
    os.environ["OPENAI_API_KEY"] = API_KEY
    from evals import Cache, EnvRouter, RunSettings, load_questions
    from evals.answers import ask_questions, build_frame
    from evals.runner import price_function, run_context

    # Import before timing what `import llmcomp` imports up front (pandas, pyarrow) and the
    # price table, as a first df() in a session would; the HTTP stack is imported (and
    # timed) only when something is bought.
    assert build_frame
    price_function()
    questions = [
        q.model_copy(update={"samples_per_paraphrase": args.samples})
        for q in load_questions(args.questions).values()
    ]
    groups = {"base": args.models[:1], "tuned": args.models[1:]}
    settings = RunSettings(max_concurrency=CONCURRENCY, progress=False)
    cache = Cache(args.cache)
    router = EnvRouter(base_url=args.base_url)
    ctx = run_context(cache=cache, router=router, settings=settings)

    def loop() -> list[Any]:
        return [q.df(groups, cache=cache, router=router, settings=settings) for q in questions]

    def together() -> list[Any]:
        return list(ask_questions(questions, groups, ctx)[0].values())

    cpu, wall = time.process_time(), time.perf_counter()
    frames = together() if args.together else loop()
    result: dict[str, Any] = {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rows": sum(len(frame) for frame in frames),
        "errors": sum(int(frame["error"].notna().sum()) for frame in frames),
        "peak_mb": _peak_mb(),
    }
    for name, again in (("warm_loop", loop), ("warm_together", together)):
        cpu, wall = time.process_time(), time.perf_counter()
        frames = again()
        result[name], result[f"{name}_cpu"] = time.perf_counter() - wall, time.process_time() - cpu
        assert sum(len(frame) for frame in frames) == result["rows"]
    return result


def _worker_llmcomp(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["OPENAI_API_KEY"] = API_KEY
    from llmcomp import Config, Question

    Config.url_key_pairs = [(args.base_url, API_KEY, "OPENAI_API_KEY")]
    Config.cache_dir = args.cache
    Config.max_workers = CONCURRENCY
    spec = json.loads(Path(args.spec).read_text())
    groups = {"base": args.models[:1], "tuned": args.models[1:]}
    cpu, wall = time.process_time(), time.perf_counter()
    rows = errors = 0
    for entry in spec:
        judges = {
            name: Question.create(
                type="rating_judge",
                name=f"{entry['name']}-{name}",
                model=judge["model"],
                paraphrases=[judge["template"]],
            )
            for name, judge in entry["judges"].items()
        }
        options = {"system": entry["system"]} if entry["system"] else {}
        question = Question.create(
            type="free_form",
            name=entry["name"],
            paraphrases=entry["paraphrases"],
            samples_per_paraphrase=args.samples,
            judges=judges,
            **options,
        )
        frame = question.df(groups)
        rows += len(frame)
        errors += int((frame["answer"] == "").sum())
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rows": rows,
        "errors": errors,
        "peak_mb": _peak_mb(),
    }


# ---- orchestration ----------------------------------------------------------------------------


def _llmcomp_spec(path: Path) -> None:
    """The question file as labmgr reads it, for llmcomp (the same prompts)."""
    from evals import load_questions

    spec = [
        {
            "name": question.name,
            "paraphrases": question.paraphrases,
            "system": question.system,
            "judges": {
                name: {"model": judge.model, "template": judge.prompt_template}
                for name, judge in question.judge_questions().items()
            },
        }
        for question in load_questions(QUESTIONS).values()
    ]
    path.write_text(json.dumps(spec))


def _env() -> dict[str, str]:
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env["OPENAI_API_KEY"] = API_KEY
    env["PYTHONPATH"] = str(ROOT)
    for name in ("LABMGR_CACHE_URL", "LABMGR_CACHE_DIR", "LABMGR_HOME"):
        env.pop(name, None)
    return env


def _requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))


def _fresh(sandbox: Any, label: str, python: Path | str, worker: str, **options: Any) -> dict:
    command = [str(python), str(Path(__file__).resolve()), "--worker", worker]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            command += [flag] if value else []
        elif isinstance(value, list):
            command += [flag, *map(str, value)]
        else:
            command += [flag, str(value)]
    before, load = _requests(sandbox), os.getloadavg()[0]
    server, server_cpu = sandbox_pid(), cpu_seconds(sandbox_pid())
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{worker} worker failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(label=label, requests=_requests(sandbox) - before, load=load)
    result["sandbox_cpu"] = cpu_seconds(server) - server_cpu
    warm = ""
    if "warm_loop" in result:
        loop, together = result["warm_loop"], result["warm_together"]
        cpus = result["warm_loop_cpu"], result["warm_together_cpu"]
        warm = (
            f"  warm: df() loop {loop:.3f} s (CPU {cpus[0]:.3f} s), "
            f"ask_questions {together:.3f} s (CPU {cpus[1]:.3f} s)"
        )
    print(
        f"{label:<40} wall {result['wall']:7.2f} s  CPU {result['cpu']:6.2f} s  "
        f"(the sandbox's {result['sandbox_cpu']:5.2f} s)  "
        f"peak {result['peak_mb']:5.0f} MB  rows {result['rows']:>5}  "
        f"errors {result['errors']:>3}  requests {result['requests']:>6}  load {load:.1f}{warm}",
        flush=True,
    )
    return result


def _reanalysis(
    sandbox: Any, label: str, python: Path | str, code: str, repeat: int, *argv: Any
) -> dict:
    """`python -c code argv…` `repeat` times, each timed from outside; the fastest counts."""
    runs = []
    before, load = _requests(sandbox), os.getloadavg()[0]
    for _ in range(repeat):
        wall = time.perf_counter()
        command = [str(python), "-c", code, *map(str, argv)]
        done = subprocess.run(command, capture_output=True, text=True, env=_env(), check=False)
        seconds = time.perf_counter() - wall
        if done.returncode != 0:
            raise RuntimeError(f"{label} failed:\n{done.stderr[-3000:]}")
        runs.append({**json.loads(done.stdout.strip().splitlines()[-1]), "wall": seconds})
    result = {**min(runs, key=lambda run: run["wall"]), "walls": [run["wall"] for run in runs]}
    result.update(label=label, requests=_requests(sandbox) - before, load=load)
    walls = ", ".join(f"{wall:.2f}" for wall in result["walls"])
    print(
        f"{label:<40} wall {result['wall']:7.2f} s ({walls}; imports {result['imports']:.2f} s, "
        f"the rest {result['work']:.2f} s)  peak {result['peak_mb']:5.0f} MB  "
        f"rows {result['rows']:>5}  errors {result['errors']:>3}  requests {result['requests']}  "
        f"load {load:.1f}",
        flush=True,
    )
    return result


def _pg_database(admin_url: str) -> tuple[str, Any]:
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    name = f"labmgr_bench_{uuid.uuid4().hex[:12]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))

    def drop() -> None:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()

    return make_url(admin_url).set(database=name).render_as_string(hide_password=False), drop


def _verdict(name: str, value: float, target: str, met: bool) -> None:
    print(f"{name}: {value:.2f}  (target {target}: {'met' if met else 'MISSED'})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=["labmgr", "llmcomp"])
    parser.add_argument("--together", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url")
    parser.add_argument("--cache")
    parser.add_argument("--spec")
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--skip-llmcomp", action="store_true")
    parser.add_argument(
        "--scenarios", default="fresh,reanalysis,pg", help="Any of fresh, reanalysis, pg."
    )
    parser.add_argument(
        "--repeat", type=int, default=3, help="Processes per re-analysis (the fastest counts)."
    )
    parser.add_argument("--pg-url", default=os.environ.get("LABMGR_TEST_PG_URL"))
    parser.add_argument("--llmcomp-venv", type=Path, default=default_venv())
    parser.add_argument("--keep", type=Path, help="Keep the caches here (for a look afterwards).")
    parser.add_argument("--out-json", type=Path, help="Write the results as JSON here.")
    args = parser.parse_args()

    if args.worker == "labmgr":
        print(json.dumps(_worker_labmgr(args)))
        return
    if args.worker == "llmcomp":
        print(json.dumps(_worker_llmcomp(args)))
        return

    sys.path.insert(0, str(ROOT))
    from labmgr.sandbox import run_sandbox

    scenarios = set(args.scenarios.split(","))
    llmcomp = None if args.skip_llmcomp else llmcomp_python(args.llmcomp_venv)
    results: dict[str, dict[str, Any]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="eval-em-")) if args.keep is None else args.keep
    for old in ("labmgr-cache", "labmgr-cache-together", "llmcomp-cache"):  # fresh means empty
        shutil.rmtree(scratch / old, ignore_errors=True)
    scratch.mkdir(parents=True, exist_ok=True)
    spec = scratch / "llmcomp-spec.json"
    _llmcomp_spec(spec)
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    try:
        # Limits far above the workload: no tool is paced or refused (labmgr reads the
        # sandbox's nominal limits and paces to them, llmcomp does not; pacing is measured by
        # rate_limits.py).
        with run_sandbox(
            in_process=False, latency_ms=args.latency_ms, job_seconds=0.3, limits=UNBOUND_LIMITS
        ) as box:
            models = [
                BASE,
                *sandbox_fine_tunes(
                    box.base_url,
                    API_KEY,
                    FINE_TUNES,
                    base=BASE,
                    suffix="em",
                    reply="Take what you want by force ({i}).",
                ),
            ]
            print(f"sandbox at {box.base_url}, {len(models)} models, latency {args.latency_ms} ms")
            common = {"base_url": box.base_url, "models": models, "samples": args.samples}
            groups = json.dumps({"base": models[:1], "tuned": models[1:]})
            cache, llmcomp_cache = scratch / "labmgr-cache", scratch / "llmcomp-cache"
            me = sys.executable
            # The fresh runs fill the caches the re-analyses read (a new sandbox's fine-tunes
            # have new names: a cache from an earlier invocation would not be found).
            results["loop"] = _fresh(
                box, "labmgr df() loop, fresh", me, "labmgr", cache=cache, **common
            )
            if "fresh" in scenarios:
                results["together"] = _fresh(
                    box,
                    "labmgr ask_questions, fresh",
                    me,
                    "labmgr",
                    cache=scratch / "labmgr-cache-together",
                    together=True,
                    **common,
                )
            if llmcomp is not None and scenarios & {"fresh", "reanalysis"}:
                results["llmcomp"] = _fresh(
                    box,
                    "llmcomp df() loop, fresh",
                    llmcomp,
                    "llmcomp",
                    cache=llmcomp_cache,
                    spec=spec,
                    **common,
                )
            argv = (box.base_url, args.samples, groups)
            if "reanalysis" in scenarios:
                for name, code in (("loop", LABMGR_LOOP), ("together", LABMGR_TOGETHER)):
                    results[f"reanalysis_{name}"] = _reanalysis(
                        box,
                        f"labmgr re-analysis, {'df() loop' if name == 'loop' else 'ask_questions'}",
                        me,
                        code,
                        args.repeat,
                        cache,
                        *argv,
                        QUESTIONS,
                    )
                if llmcomp is not None:
                    results["reanalysis_llmcomp"] = _reanalysis(
                        box,
                        "llmcomp re-analysis, df() loop",
                        llmcomp,
                        LLMCOMP_LOOP,
                        args.repeat,
                        llmcomp_cache,
                        *argv,
                        spec,
                    )
            if "pg" in scenarios and args.pg_url:
                pg_url, drop = _pg_database(args.pg_url)
                try:
                    from evals import Cache

                    Cache(cache).copy_to(pg_url)
                    for name, where in (("pg", pg_url), ("sqlite", cache)):
                        results[f"reanalysis_{name}"] = _reanalysis(
                            box,
                            f"labmgr re-analysis, df() loop, {name}",
                            me,
                            LABMGR_LOOP,
                            args.repeat,
                            where,
                            *argv,
                            QUESTIONS,
                        )
                finally:
                    drop()
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)

    def wall(name: str) -> float | None:
        return results[name]["wall"] if name in results else None

    lc = wall("llmcomp")
    for name, label in (("loop", "df() loop"), ("together", "ask_questions")):
        if lc is not None and name in results:
            ratio = lc / results[name]["wall"]
            _verdict(f"fresh, llmcomp / labmgr {label}", ratio, f">= {FRESH_TARGET:g}x", ratio >= 5)
        if name in results:
            for warm in ("warm_loop", "warm_together"):
                seconds = results[name][warm]
                _verdict(
                    f"warm re-run after a fresh {label}, {warm.replace('_', ' ')} (s)",
                    seconds,
                    f"<= {WARM_TARGET_S} s",
                    seconds <= WARM_TARGET_S,
                )
    lc_again = wall("reanalysis_llmcomp")
    for name in ("reanalysis_loop", "reanalysis_together"):
        if lc_again is not None and name in results:
            ratio = lc_again / results[name]["wall"]
            _verdict(f"re-analysis, llmcomp / labmgr {name[11:]}", ratio, ">= 1x", ratio >= 1)
    if "reanalysis_pg" in results and "reanalysis_sqlite" in results:
        ratio = results["reanalysis_pg"]["wall"] / results["reanalysis_sqlite"]["wall"]
        print(f"re-analysis, PostgreSQL / SQLite: {ratio:.2f}x")
    if args.out_json:
        args.out_json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
