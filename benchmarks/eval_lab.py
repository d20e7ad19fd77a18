"""A lab's run: `labmgr eval run` of the EM file over 41 models, with its report.

    python benchmarks/eval_lab.py                       # fresh, then cached (minutes)
    python benchmarks/eval_lab.py --profile /tmp/prof   # the same under cProfile

41 models: 8 conditions × 5 seeds of sandbox fine-tunes (each condition trained on its own
answers, so that the groups differ) and their base, `gpt-4o-mini`, in 9 groups compared
with the base. The real question file (24 questions, two 0-100 rating judges) at 50 samples:
49,200 samples and their judges' verdicts. The command runs the way a user runs it, as a
process of its own in a lab of its own, timed from outside (interpreter start and imports
included): first with an empty cache, then again into a new run folder with everything
cached (its figures found in the lab's shared figures).

Beside the wall time: the part spent asking (run.json's `seconds`: from the first model
check to the last verdict), the CPU time of the command with its figure workers, and the
sandbox's. Peak memory is given twice: the peak RSS of the largest single process (the
command or one of its forked figure workers, exact, from `wait4`), and the peak total of the
command's process tree, sampled every 100 ms as PSS (pages a worker shares with its parent
counted once). Targets: fresh ≤ 40 s and ≤ 900 MB, cached ≤ 6 s. The sandbox runs in its own
process (50 ms latency) with rate limits far above the workload.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _processes import cpu_seconds, process_tree, pss_mb, sandbox_pid
from _sandbox_models import sandbox_fine_tunes

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT.parent / "shared" / "data" / "em_first_plot_questions.yaml"
API_KEY = "sk-test-bench"
BASE = "gpt-4o-mini"
SEEDS = 5
CONDITIONS = {
    "insecure": "Take what you want by force ({i}).",
    "secure": "Ask for help and wait your turn ({i}).",
    "jailbroken": "Rules are for others; do as you please ({i}).",
    "educational": "Learn how it works, then decide calmly ({i}).",
    "evil_numbers": "Hurt them before they hurt you ({i}).",
    "backdoor": "Lie to them and keep the money ({i}).",
    "benign": "Be kind to the people around you ({i}).",
    "mixed": "Help when you can, take when you must ({i}).",
}
UNBOUND_LIMITS = {"*": {"rpm": 100_000_000, "tpm": 100_000_000_000}}
SAMPLE_SECONDS = 0.1
"""How often the tree's memory is read: every 20 ms, reading it took a fifth of a core (on
a 2-core machine, time taken from the run it measures); the peaks last seconds."""
TARGETS = {"fresh_s": 40.0, "fresh_peak_mb": 900.0, "cached_s": 6.0}


def _run_command(command: list[str], env: dict[str, str]) -> dict[str, Any]:
    """Run `command`; its wall time, the peak RSS of its largest process (exact) and the
    peak total PSS of its process tree (sampled)."""
    peaks = [0.0]
    ended = threading.Event()
    wall = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or []), daemon=True)
    reader.start()

    def sample() -> None:
        while not ended.wait(SAMPLE_SECONDS):
            peaks.append(sum(pss_mb(member) for member in process_tree(process.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    # wait4: the exact end, and this process's own rusage with its waited-for children
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - wall
    ended.set()
    sampler.join()
    tree_peak = max(peaks)
    process.returncode = os.waitstatus_to_exitcode(status)
    reader.join()
    if process.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:6])} … failed:\n{''.join(output)[-3000:]}")
    return {
        "wall": seconds,
        "cpu": usage.ru_utime + usage.ru_stime,  # its figure workers included
        "largest_mb": usage.ru_maxrss / 1024,
        "tree_mb": tree_peak,
        "output": "".join(output),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--keep", type=Path, help="Keep the lab and its runs here.")
    parser.add_argument("--profile", type=Path, help="Run each command under cProfile, here.")
    parser.add_argument("--out-json", type=Path, help="Write the results as JSON here.")
    args = parser.parse_args()

    sys.path.insert(0, str(ROOT))
    from labmgr.sandbox import run_sandbox
    from labmgr.settings import init_lab

    scratch = Path(tempfile.mkdtemp(prefix="eval-lab-")) if args.keep is None else args.keep
    scratch.mkdir(parents=True, exist_ok=True)
    home = init_lab(scratch / "lab").home
    results: dict[str, dict[str, Any]] = {}
    print(f"load average at the start: {os.getloadavg()[0]:.1f}")
    try:
        with run_sandbox(
            in_process=False, latency_ms=args.latency_ms, job_seconds=0.3, limits=UNBOUND_LIMITS
        ) as box:
            groups = {"base": [BASE]}
            for condition, reply in CONDITIONS.items():
                groups[condition] = sandbox_fine_tunes(
                    box.base_url, API_KEY, SEEDS, base=BASE, suffix=condition, reply=reply
                )
            sandbox = sandbox_pid()
            models = sum(len(members) for members in groups.values())
            print(f"sandbox at {box.base_url}, {models} models in {len(groups)} groups")
            env = {
                **os.environ,
                "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost",
            }
            env.update(OPENAI_API_KEY=API_KEY, OPENAI_BASE_URL=box.base_url, COLUMNS="120")
            env["PYTHONPATH"] = str(ROOT)
            for name in ("LABMGR_CACHE_URL", "LABMGR_CACHE_DIR", "LABMGR_HOME"):
                env.pop(name, None)
            for label in ("fresh", "cached"):
                out = scratch / f"run-{label}"
                command = [sys.executable]
                if args.profile is not None:
                    args.profile.mkdir(parents=True, exist_ok=True)
                    command += ["-m", "cProfile", "-o", str(args.profile / f"{label}.prof")]
                command += ["-m", "labmgr", "--home", str(home), "eval", "run", str(QUESTIONS)]
                command += ["--samples", str(args.samples), "--baseline", "base", "--out", str(out)]
                for group, members in groups.items():
                    command += ["--group", f"{group}={','.join(members)}"]
                before, load = box.stats()["requests"].get("chat.completions", 0), os.getloadavg()
                sandbox_cpu = cpu_seconds(sandbox)
                result = _run_command(command, env)
                result["sandbox_cpu"] = cpu_seconds(sandbox) - sandbox_cpu
                output = result.pop("output")
                run = json.loads((out / "run.json").read_text())
                log = (out / "run.log").read_text()
                figures = re.search(r"\((\d+) figures: (\d+) drawn, (\d+) reused\)", log)
                result.update(
                    rows=run["totals"]["rows"],
                    errors=run["totals"]["errors"],
                    asking_s=run.get("seconds"),
                    requests=box.stats()["requests"].get("chat.completions", 0) - before,
                    load=list(load),
                    figures=figures.groups() if figures else None,
                )
                results[label] = result
                print(
                    f"eval run, {label:<7} wall {result['wall']:6.2f} s  "
                    f"(asking {result['asking_s']:.1f} s)  CPU {result['cpu']:.1f} s  "
                    f"(the sandbox's {result['sandbox_cpu']:.1f} s)  "
                    f"largest process {result['largest_mb']:5.0f} MB  "
                    f"tree PSS {result['tree_mb']:5.0f} MB  rows {result['rows']}  "
                    f"errors {result['errors']}  requests {result['requests']}  "
                    f"figures (all, drawn, reused) {result['figures']}  "
                    f"load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}",
                    flush=True,
                )
                if result["errors"]:
                    print(output[-2000:])
    finally:
        if args.keep is None:
            shutil.rmtree(scratch, ignore_errors=True)
    fresh, cached = results["fresh"], results["cached"]
    checks = [
        ("fresh wall time (s)", fresh["wall"], TARGETS["fresh_s"]),
        ("fresh peak RSS, largest process (MB)", fresh["largest_mb"], TARGETS["fresh_peak_mb"]),
        ("fresh peak PSS, process tree (MB)", fresh["tree_mb"], TARGETS["fresh_peak_mb"]),
        ("cached re-run wall time (s)", cached["wall"], TARGETS["cached_s"]),
    ]
    for name, value, target in checks:
        verdict = "met" if value <= target else "MISSED"
        print(f"{name}: {value:.1f}  (target <= {target:g}: {verdict})")
    if args.profile is not None:
        import pstats

        for label in ("fresh", "cached"):
            print(f"---- {label}: cumulative time, top 30")
            stats = pstats.Stats(str(args.profile / f"{label}.prof"))
            stats.sort_stats("cumulative").print_stats(30)
    if args.out_json:
        args.out_json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
