"""The Emergent-Misalignment workload: labmgr against llmcomp, same sandbox, one run.

    python benchmarks/eval_em.py                         # everything (some minutes)
    python benchmarks/eval_em.py --skip-llmcomp
    python benchmarks/eval_em.py --against /tmp/before   # also an earlier labmgr source tree
    python benchmarks/eval_em.py --pg-url postgresql+psycopg://postgres@127.0.0.1:5432/postgres

The real question file (24 questions, two 0-100 rating judges: one judge request per
answer) over 7 sandbox models (a base model and 6 fine-tunes):

  df     every question's `df()` at 50 samples (8,400 samples, 16,800 judge verdicts), fresh
         and then fully cached in a new process, for labmgr and llmcomp 1.6.0 (installed
         from PyPI into its own venv on first use), and with --against for the earlier tree;
         wall time, CPU and the peak RSS of the worker process; and the same workload as
         labmgr runs a file (`labmgr eval run --no-report`, fresh, in a lab of its own)
  run    `labmgr eval run` of the file at 200 samples (33,600 samples), fully cached, with
         and without the report; wall time and peak RSS (the figure processes' own peak
         apart), for this tree and, with --against, for an earlier source tree; then, for
         this tree, the report written again in its folder and a run into a new folder
         (figures from the lab's shared figures)
  pg     the cached `df()` reload with the cache in PostgreSQL (a database created for the
         run on the server of --pg-url, loopback) against the same cache in SQLite

Each measurement runs in a fresh process; the sandbox runs in its own process (50 ms latency),
with rate limits far above the workload so that no tool is paced or refused.
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
from _sandbox_models import sandbox_fine_tunes

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT.parent / "shared" / "data" / "em_first_plot_questions.yaml"
API_KEY = "sk-test-bench"
CONCURRENCY = 100
BASE = "gpt-4o-mini"
FINE_TUNES = 6
UNBOUND_LIMITS = {"*": {"rpm": 100_000_000, "tpm": 100_000_000_000}}


def _peak_mb(who: int = resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # kilobytes on Linux


# ---- workers (each in a fresh process; the llmcomp one in llmcomp's venv) ---------------------


def _worker_labmgr_df(args: argparse.Namespace) -> dict[str, Any]:
    os.environ["OPENAI_API_KEY"] = API_KEY
    from evals import Cache, EnvRouter, RunSettings, load_questions
    from evals.answers import add_judges, build_frame
    from evals.runner import price_function

    # Import before timing what `import llmcomp` imports up front (pandas, pyarrow) and the
    # price table, as a first df() in a session would; the HTTP stack is imported (and
    # timed) only when something is bought.
    assert build_frame and add_judges
    price_function()
    questions = load_questions(args.questions)
    groups = {"base": args.models[:1], "tuned": args.models[1:]}
    # Without kept frames (--no-kept-frames) every question's frame is built from its samples.
    # A PostgreSQL cache keeps its frames in a local folder (--frames-dir), as a lab's does.
    # (The options are passed only when given: an earlier tree's Cache may not know them.)
    if args.no_kept_frames:
        cache = Cache(args.cache, frame_limit_bytes=0)
    elif args.frames_dir is not None:
        cache = Cache(args.cache, frames_dir=args.frames_dir)
    else:
        cache = Cache(args.cache)
    settings = RunSettings(max_concurrency=CONCURRENCY, progress=False)
    router = EnvRouter(base_url=args.base_url)
    cpu, wall = time.process_time(), time.perf_counter()
    rows = errors = 0
    for question in questions.values():
        question = question.model_copy(update={"samples_per_paraphrase": args.samples})
        frame = question.df(groups, cache=cache, router=router, settings=settings)
        rows += len(frame)
        errors += int(frame["error"].notna().sum())
    return {
        "wall": time.perf_counter() - wall,
        "cpu": time.process_time() - cpu,
        "rows": rows,
        "errors": errors,
        "peak_mb": _peak_mb(),
    }


def _worker_llmcomp_df(args: argparse.Namespace) -> dict[str, Any]:
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


def _worker_eval_run(args: argparse.Namespace) -> dict[str, Any]:
    """`labmgr eval run` in this process, the way the command line calls it."""
    os.environ["OPENAI_API_KEY"] = API_KEY
    os.environ["OPENAI_BASE_URL"] = args.base_url
    from typer.testing import CliRunner

    from labmgr.cli import app

    command = ["--home", args.home, "eval", "run", args.questions, "--samples", str(args.samples)]
    command += [
        "--group",
        f"base={args.models[0]}",
        "--group",
        "tuned=" + ",".join(args.models[1:]),
    ]
    command += ["--out", args.out] + (["--no-report"] if args.no_report else [])
    wall = time.perf_counter()
    done = CliRunner().invoke(app, command)
    if done.exit_code != 0:
        raise RuntimeError(f"eval run failed ({done.exit_code}): {done.output[-2000:]}")
    run = json.loads((Path(args.out) / "run.json").read_text())
    return {
        "wall": time.perf_counter() - wall,
        "rows": run["totals"]["rows"],
        "errors": run["totals"]["errors"],
        "peak_mb": _peak_mb(),
        "children_peak_mb": _peak_mb(resource.RUSAGE_CHILDREN),
    }


# ---- orchestration ----------------------------------------------------------------------------


def _llmcomp_spec(path: Path) -> list[dict[str, Any]]:
    """The question file as labmgr reads it, for llmcomp's worker (the same prompts)."""
    from evals import load_questions

    spec = []
    for question in load_questions(QUESTIONS).values():
        spec.append(
            {
                "name": question.name,
                "paraphrases": question.paraphrases,
                "system": question.system,
                "judges": {
                    name: {"model": judge.model, "template": judge.prompt_template}
                    for name, judge in question.judge_questions().items()
                },
            }
        )
    path.write_text(json.dumps(spec))
    return spec


def _run_worker(python: Path | str, worker: str, source: Path, **options: Any) -> dict[str, Any]:
    command = [str(python), str(Path(__file__).resolve()), "--worker", worker]
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if isinstance(value, bool):
            command += [flag] if value else []
        elif isinstance(value, list):
            command += [flag, *map(str, value)]
        else:
            command += [flag, str(value)]
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env["PYTHONPATH"] = str(source)
    env.pop("LABMGR_CACHE_URL", None)
    env.pop("LABMGR_CACHE_DIR", None)
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{worker} worker failed:\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def _requests(sandbox: Any) -> int:
    return int(sandbox.stats()["requests"].get("chat.completions", 0))


def _measure(sandbox: Any, label: str, python: Path | str, worker: str, **options: Any) -> dict:
    before = _requests(sandbox)
    source = options.pop("source", ROOT)
    result = _run_worker(python, worker, source, **options)
    result["requests"] = _requests(sandbox) - before
    result["label"] = label
    load = os.getloadavg()[0]
    result["load"] = load
    extra = ""
    if "children_peak_mb" in result:
        extra = f"  (figure processes' peak {result['children_peak_mb']:.0f} MB)"
    print(
        f"{label:<48} wall {result['wall']:7.2f} s  "
        + (f"CPU {result['cpu']:6.2f} s  " if "cpu" in result else "")
        + f"peak {result['peak_mb']:6.0f} MB  rows {result['rows']:>6}  "
        f"errors {result['errors']:>4}  requests {result['requests']:>6}  load {load:.1f}{extra}",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--worker", choices=["labmgr-df", "llmcomp-df", "eval-run"])
    parser.add_argument("--base-url")
    parser.add_argument("--cache")
    parser.add_argument("--spec")
    parser.add_argument("--home")
    parser.add_argument("--out")
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument(
        "--no-kept-frames", action="store_true", help="Build every frame from its samples."
    )
    parser.add_argument("--frames-dir", help="Where a PostgreSQL cache keeps its frames.")
    parser.add_argument("--models", nargs="*", default=[])
    parser.add_argument("--questions", default=str(QUESTIONS))
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--big-samples", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--skip-llmcomp", action="store_true")
    parser.add_argument("--scenarios", default="df,run,pg", help="Any of df, run, pg.")
    parser.add_argument("--against", type=Path, help="An earlier labmgr source tree to compare.")
    parser.add_argument("--pg-url", default=os.environ.get("LABMGR_TEST_PG_URL"))
    parser.add_argument("--llmcomp-venv", type=Path, default=default_venv())
    parser.add_argument("--keep", type=Path, help="Keep the caches and run folders here.")
    parser.add_argument("--out-json", type=Path, help="Write the results as JSON here.")
    args = parser.parse_args()

    workers = {
        "labmgr-df": _worker_labmgr_df,
        "llmcomp-df": _worker_llmcomp_df,
        "eval-run": _worker_eval_run,
    }
    if args.worker:
        print(json.dumps(workers[args.worker](args)))
        return

    sys.path.insert(0, str(ROOT))
    from labmgr.sandbox import run_sandbox

    scenarios = set(args.scenarios.split(","))
    llmcomp = None if args.skip_llmcomp else llmcomp_python(args.llmcomp_venv)
    results: dict[str, dict[str, Any]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="eval-em-")) if args.keep is None else args.keep
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    try:
        # Limits far above the workload: no tool is paced or refused (the sandbox's nominal
        # 10,000 requests a minute would otherwise pace labmgr, which reads the headers, and
        # not llmcomp, which does not; pacing is measured by rate_limits.py).
        with run_sandbox(
            in_process=False,
            latency_ms=args.latency_ms,
            job_seconds=0.3,
            limits=UNBOUND_LIMITS,
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
            me = sys.executable
            if "df" in scenarios or "pg" in scenarios:
                cache = scratch / "labmgr-cache"
                results["df_fresh"] = _measure(
                    box, "labmgr df(), fresh", me, "labmgr-df", cache=cache, **common
                )
                results["df_cached"] = _measure(
                    box, "labmgr df(), cached, new process", me, "labmgr-df", cache=cache, **common
                )
                if "df" in scenarios:  # the same workload as one file run (answers bought together)
                    from labmgr.settings import init_lab

                    results["file_fresh"] = _measure(
                        box,
                        "labmgr eval run of the file, fresh, --no-report",
                        me,
                        "eval-run",
                        home=init_lab(scratch / "lab-file").home,
                        out=scratch / "run-file",
                        no_report=True,
                        **common,
                    )
                if args.against is not None:  # the earlier tree, fresh and cached, same sandbox
                    before = scratch / "labmgr-cache-before"
                    source = args.against.resolve()
                    for name, label in (("fresh", "fresh"), ("cached", "cached, new process")):
                        results[f"df_before_{name}"] = _measure(
                            box,
                            f"[before] labmgr df(), {label}",
                            me,
                            "labmgr-df",
                            cache=before,
                            source=source,
                            **common,
                        )
            if llmcomp is not None and "df" in scenarios:
                spec = scratch / "llmcomp-spec.json"
                _llmcomp_spec(spec)
                cache = scratch / "llmcomp-cache"
                for name, label in (("fresh", "fresh"), ("cached", "cached, new process")):
                    results[f"llmcomp_{name}"] = _measure(
                        box,
                        f"llmcomp df(), {label}",
                        llmcomp,
                        "llmcomp-df",
                        cache=cache,
                        spec=spec,
                        **common,
                    )
            if "pg" in scenarios and args.pg_url:
                pg_url, drop = _pg_database(args.pg_url)
                try:
                    from evals import Cache

                    Cache(scratch / "labmgr-cache").copy_to(pg_url)
                    frames = scratch / "pg-frames"
                    results["df_cached_pg_first"] = _measure(
                        box,
                        "labmgr df(), cached in PostgreSQL, first",
                        me,
                        "labmgr-df",
                        cache=pg_url,
                        frames_dir=frames,
                        **common,
                    )
                    results["df_cached_pg"] = _measure(
                        box,
                        "labmgr df(), cached in PostgreSQL, again",
                        me,
                        "labmgr-df",
                        cache=pg_url,
                        frames_dir=frames,
                        **common,
                    )
                    results["df_cached_sqlite"] = _measure(
                        box,
                        "labmgr df(), cached in SQLite",
                        me,
                        "labmgr-df",
                        cache=scratch / "labmgr-cache",
                        **common,
                    )
                    # The first reload from PostgreSQL builds its frames from samples: the
                    # reads themselves, compared with SQLite's.
                    results["df_cached_sqlite_samples"] = _measure(
                        box,
                        "labmgr df(), cached in SQLite, from samples",
                        me,
                        "labmgr-df",
                        cache=scratch / "labmgr-cache",
                        no_kept_frames=True,
                        **common,
                    )
                finally:
                    drop()
            if "run" in scenarios:
                big = {**common, "samples": args.big_samples}
                trees = [("now", ROOT)]
                if args.against is not None:
                    trees.insert(0, ("before", args.against.resolve()))
                for tree, source in trees:
                    from labmgr.settings import init_lab

                    home = init_lab(scratch / f"lab-{tree}").home
                    options = {"home": home, "source": source, **big}
                    _measure(
                        box,
                        f"[{tree}] eval run {args.big_samples} samples, filling",
                        me,
                        "eval-run",
                        out=scratch / f"run-{tree}-fill",
                        no_report=True,
                        **options,
                    )
                    kinds = (
                        (False, "no_report", "plain"),
                        (True, "report", "report"),
                        (True, "again", "report"),
                        (True, "new_folder", "report-2"),
                    )
                    for report, label, folder in kinds:
                        if label in ("again", "new_folder") and tree != "now":
                            continue
                        what = {
                            "no_report": "--no-report",
                            "report": "with the report",
                            "again": "with the report, same folder (figures reused)",
                            "new_folder": "with the report, new folder (the lab's figures)",
                        }[label]
                        results[f"run_{tree}_{label}"] = _measure(
                            box,
                            f"[{tree}] eval run, cached, {what}",
                            me,
                            "eval-run",
                            out=scratch / f"run-{tree}-{folder}",
                            no_report=not report,
                            **options,
                        )
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    ratios: dict[str, float] = {}

    def ratio(name: str, slow: str, fast: str) -> None:
        if slow in results and fast in results:
            ratios[name] = results[slow]["wall"] / results[fast]["wall"]

    ratio("fresh, llmcomp / labmgr", "llmcomp_fresh", "df_fresh")
    ratio("cached, llmcomp / labmgr", "llmcomp_cached", "df_cached")
    ratio("fresh, llmcomp df() loop / labmgr eval run of the file", "llmcomp_fresh", "file_fresh")
    ratio("df fresh, before / now", "df_before_fresh", "df_fresh")
    ratio("df cached, before / now", "df_before_cached", "df_cached")
    ratio("cached reload, PostgreSQL / SQLite", "df_cached_pg", "df_cached_sqlite")
    ratio(
        "cached reload from samples, PostgreSQL / SQLite",
        "df_cached_pg_first",
        "df_cached_sqlite_samples",
    )
    ratio("eval run --no-report, before / now", "run_before_no_report", "run_now_no_report")
    ratio("eval run with report, before / now", "run_before_report", "run_now_report")
    ratio(
        "eval run with report, before / now into a new folder after a first report",
        "run_before_report",
        "run_now_new_folder",
    )
    for name, value in ratios.items():
        print(f"{name}: {value:.2f}x")
    if args.out_json:
        args.out_json.write_text(json.dumps({"results": results, "ratios": ratios}, indent=2))


if __name__ == "__main__":
    main()
