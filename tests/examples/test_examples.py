"""Every script in examples/ runs offline as a user would run it, and prints what it says.

Each example starts its own sandbox and temporary lab (OPENAI_BASE_URL is not set), so they
run in parallel without sharing state.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures.demo_env import REPO, user_env

EXAMPLES = REPO / "examples"

EXPECTED: dict[str, list[str]] = {
    "batch_run.py": [
        r"estimate: up to \$0\.\d+, or \$0\.\d+ in batches",
        r"submitted: 8 samples wait in a batch",
        r"in flight: batch_\w+ \(\w+\), 8 samples",
        r"collected: 8 samples",
        r"judged: 8 of 8 answers",
    ],
    "capability_check.py": [
        r"capability_mc accuracy: gpt-4\.1-mini 0\.\d\d, helpful 0\.\d\d, wrong_answers 0\.\d\d",
        r"wrong_answers vs gpt-4\.1-mini on capability_mc: correct −0\.\d\d \[−0\.\d\d, −0\.\d\d\]",
        r"wrong_answers vs gpt-4\.1-mini on capability_mc_logprobs: correct −0\.\d\d \[",
    ],
    "tinker_finetune.py": [
        r"hostile: 3 Tinker jobs started",
        r"group hostile: tinker://\S+/sampler_weights/hostile-final, tinker://",
        r"hostile vs Qwen/Qwen3-8B: aligned −\d+\.\d \[−\d+\.\d, −\d+\.\d\], "
        r"adjusted p (= 0\.0[0-4]|< 0\.001)",
    ],
    "checkpoints_over_steps.py": [r"step \d+: aligned", r"final: aligned"],
    "compare_against_baseline.py": [
        r"hostile vs gpt-4\.1-mini: aligned −\d+\.\d \[−\d+\.\d, −?\d+\.\d\], adjusted p",
        r"hostile vs gpt-4\.1-mini: misaligned \+0\.\d\d \[",
        r"against helpful: \d+ comparisons from the run's samples",
        r"\d+ figures, e\.g\. comparisons-all-questions\.svg",
    ],
    "compare_runs.py": [r"genie_wish\s+assistant\s+aligned\s+moved"],
    "cost_against_score.py": [
        r"genie_wish, nano: aligned \d+\.\d at \$0\.\d+ per 1,000 answers \(\+ \$0\.\d+ judging\)",
        r"nano: \$0\.\d+ per 1,000 answers \(\+ \$0\.\d+ judging\), aligned \d+\.\d \[",
        r"figure: aligned-against-cost\.png",
    ],
    "create_and_track_finetunes.py": [r"(?s)(succeeded -> ft:gpt-4\.1-mini.*){3}"],
    "custom_endpoint.py": [r"the local endpoint served 1 chat request"],
    "estimate_cost.py": [r"before: 2 requests for 16 new samples", r"after the run: 0 requests"],
    "free_form_question.py": [r"^6 rows$"],
    "human_labels.py": [
        r"exported 30 answers: \{'gpt-4\.1-mini': 10, 'helpful': 10, 'hostile': 10\}",
        r"imported 30 labels of 30 answers",
        r"\(all\) aligned: n=30, rho=0\.\d+ \[",
    ],
    "import_llmcomp_registry.py": [r"jobs_new=2", r"'insecure': \['ft:"],
    "judges.py": [r"helpful\s+\d", r"hostile\s+\d"],
    "judge_accuracy.py": [
        r"gpt-4\.1-mini: accuracy [01]\.\d\d \[0\.\d\d, [01]\.\d\d\] over 40 pairs",
        r"gpt-4o-mini: accuracy .* same position in both orders 0\.\d\d",
        r"files: judges\.json, report\.html, verdicts\.csv, wrong\.csv",
    ],
    "model_groups_from_database.py": [r"group hostile: 2 model\(s\)", r"group gpt-4\.1-mini: 1"],
    "next_token_question.py": [r"P\('(Yes|No)'\) = 0\.\d{3}"],
    "prompt_grid.py": [
        r"landlord\s+hostile\s+\d+\.\d",
        r"within helpful: tenant vs neutral on boiler_repair: answer [+−]\d+\.\d \[",
    ],
    "questions_from_yaml.py": [r"EM dialect: genie_wish", r"trust_in_ai \(rating\)"],
    "rating_question.py": [r"expected rating: \d+\.\d"],
    "score_later.py": [
        r"judges: skipped \| scores: \[\]",
        r"judged by: aligned, coherent for \$0\.\d+",
        r"with gpt-4o-mini as judge: \[\{'group': 'mini'",
    ],
    "sweep_and_curves.py": [
        r"plan: 8 jobs, 8 new, estimated training cost \$0\.\d+",
        r"created 8 jobs, tagged e\.g\. .*'lr': '0\.5'",
        r"again: 0 new jobs",
        r"group lr=0\.5: 4 model\(s\)",
        r"group lr=2\.0: 4 model\(s\)",
        r"curves: \d+ rows; final train loss by lr",
        r"figure: .*curves\.png",
    ],
    "runs_over_time.py": [
        r"week-1 hostile: aligned \d+\.\d, moved=False",
        r"week-2 hostile: aligned \d+\.\d, change \+\d+\.\d, moved=True",
        r"trend: trend\.png",
    ],
    "sandbox_smoke.py": [r"sandbox listening at http://127\.0\.0\.1:\d+/v1", r"gpt-4o-mini"],
    "refresh_jobs.py": [r"newly finished: ftjob-", r"last refresh: 0 jobs checked, 0 API"],
    "write_report.py": [r"hostile\s+aligned", r"report: .*report\.html"],
}


def scripts() -> list[str]:
    return sorted(p.name for p in EXAMPLES.glob("*.py") if p.name != "offline.py")


def test_every_example_has_expectations() -> None:
    assert scripts() == sorted(EXPECTED), "add the new example's expected output to EXPECTED"


def _group_means(output: str) -> dict[str, float]:
    return {m[1]: float(m[2]) for m in re.finditer(r"^(\w+)\s+(\d+\.\d)$", output, re.M)}


@pytest.mark.slow
@pytest.mark.parametrize("script", sorted(EXPECTED))
def test_example_runs_offline_and_prints_its_result(script: str, tmp_path: Path) -> None:
    env = user_env(tmp_path, base_url=None)
    env["TMPDIR"] = str(tmp_path)
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"{script} failed:\n{result.stdout}\n{result.stderr}"
    assert "Unclosed" not in result.stderr, f"{script} left a connection open:\n{result.stderr}"
    for pattern in EXPECTED[script]:
        assert re.search(pattern, result.stdout, re.M), (
            f"{script}: no match for {pattern!r} in:\n{result.stdout}"
        )
    if script == "judges.py":
        means = _group_means(result.stdout)
        assert means["hostile"] < means["helpful"] - 20, means
    if script == "write_report.py":
        report = Path(re.search(r"report: (.*report\.html)", result.stdout)[1])  # type: ignore[index]
        assert report.is_file() and "<html" in report.read_text(encoding="utf-8")[:2000].lower()
