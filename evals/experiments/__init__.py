"""Experiments: the orchestration above the run folder and the report — ask questions of model
groups into a run folder, write its report, estimate what a run would buy.

from evals.experiments import run_questions
run = run_questions(load_questions("questions.yaml"), {"base": ["gpt-4.1-mini"]}, lab=settings)
run.summary          # question × group × score: mean, 95% CI, refusal rate
"""

from evals.experiments._estimating import estimate_run
from evals.experiments._running import default_run_dir, run_questions
from evals.experiments._writing import write_run

__all__ = ["default_run_dir", "estimate_run", "run_questions", "write_run"]
