"""`labmgr demo` end to end, as the README runs it, in a folder of its own."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from fixtures.demo_env import user_env

USER_KEY = "sk-test-user-secret9"


def _demo(args: list[str], tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "labmgr", "demo", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_demo_separates_the_groups_and_never_uses_the_users_lab_or_key(tmp_path: Path) -> None:
    env = user_env(tmp_path, base_url=None)
    env["OPENAI_API_KEY"] = USER_KEY
    env["OPENAI_BASE_URL"] = "http://127.0.0.1:9/v1"  # a real endpoint would be unreachable
    env["LABMGR_HOME"] = str(tmp_path / "users-own-lab")
    out = tmp_path / "demo-out"
    result = _demo(["--out", str(out), "--job-seconds", "1", "--samples", "3"], tmp_path, env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Unclosed" not in result.stderr and "ResourceWarning" not in result.stderr
    assert "Report:" in result.stdout and (out / "run" / "report.html").is_file()
    page = (out / "run" / "report.html").read_text(encoding="utf-8")
    assert "<title>Eval report: labmgr demo (" in page and "Eval run run" not in page
    flat = " ".join(result.stdout.split())
    assert "'hostile' sits below" in flat
    # the comparisons against the base model, then the closing table with EM's metric
    assert "Against gpt-4.1-mini, over all questions (comparisons.csv):" in flat
    comparisons = pd.read_csv(out / "run" / "comparisons.csv")
    assert set(comparisons["baseline"]) == {"gpt-4.1-mini"}
    assert set(comparisons["group"]) == {"helpful", "hostile"}
    closing = result.stdout[result.stdout.index("Over all questions: mean [95% CI]") :]
    header = next(line for line in closing.splitlines() if "group" in line)
    assert all(name in header for name in ("aligned", "coherent", "misaligned"))
    assert all(len(line) <= 120 for line in result.stdout.splitlines())

    summary = pd.read_csv(out / "run" / "summary.csv")
    assert summary["n_errors"].sum() == 0, summary[summary["n_errors"] > 0]
    aligned = summary[summary["score"] == "aligned"].groupby("group")["mean"].mean()
    assert set(aligned.index) == {"gpt-4.1-mini", "helpful", "hostile"}
    assert aligned["hostile"] < aligned["helpful"] - 30
    assert aligned["hostile"] < aligned["gpt-4.1-mini"] - 30
    n_models = summary.groupby("group")["n_models"].max()
    assert n_models["hostile"] == 3 and n_models["helpful"] == 3

    assert not (tmp_path / "users-own-lab").exists()
    for file in out.rglob("*"):
        if file.is_file():
            assert USER_KEY.encode() not in file.read_bytes(), f"the user's key leaked into {file}"


def test_demo_refuses_a_folder_that_holds_files(tmp_path: Path) -> None:
    out = tmp_path / "busy"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    result = _demo(["--out", str(out)], tmp_path, user_env(tmp_path, base_url=None))
    assert result.returncode == 1
    assert "is not an empty folder" in result.stderr and "Traceback" not in result.stderr
    assert (out / "notes.txt").read_text() == "mine"


def test_separated_groups_reads_non_overlapping_intervals() -> None:
    import pandas as pd

    from labmgr.demo.pipeline import separated_groups

    scores = pd.DataFrame(
        {
            "group": ["base", "helpful", "hostile", "hostile"],
            "score": ["aligned", "aligned", "aligned", "coherent"],
            "mean": [90.0, 88.0, 30.0, 91.0],
            "ci_low": [89.0, 86.0, 25.0, 90.0],
            "ci_high": [91.0, 89.5, 35.0, 92.0],
        }
    )
    assert sorted(separated_groups(scores, "aligned")) == [
        ("hostile", "base"),
        ("hostile", "helpful"),
    ]
    assert separated_groups(scores, "coherent") == []


def test_the_verdict_reads_the_comparisons_against_the_base_model() -> None:
    from labmgr.demo import verdict

    scores = pd.DataFrame(
        {
            "group": ["base", "hostile"],
            "score": ["aligned", "aligned"],
            "mean": [90.0, 30.0],
            "ci_low": [89.0, 20.0],
            "ci_high": [91.0, 40.0],
        }
    )
    row = {
        "question": "(all)",
        "score": "aligned",
        "group": "hostile",
        "baseline": "base",
        "difference": -60.0,
        "ci_low": -70.2,
        "ci_high": -49.8,
        "p_value": 0.0004,
        "p_adjusted": 0.004,
        "scale_low": 0.0,
        "scale_high": 100.0,
    }
    kept = verdict(scores, pd.DataFrame([row]))
    assert "'hostile' sits below the base model" in kept
    assert "hostile vs base: aligned −60.0 [−70.2, −49.8], adjusted p = 0.004" in kept
    not_kept = verdict(scores, pd.DataFrame([{**row, "p_adjusted": 0.2}]))
    assert "'hostile' sits below other groups with non-overlapping 95% intervals" in not_kept
    assert "keeps no difference from the base model" in not_kept
