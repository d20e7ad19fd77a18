"""Judge accuracy: how well judge models grade labelled items (pairs with the better answer,
answers with a gold score or label, or a run's human labels), each judge asked every item
(pairs in both orders) through the run pipeline.

from evals.judge_accuracy import check_judges, items_from_run
found = check_judges("judge_pairs.jsonl", ["gpt-4.1-mini", "gpt-4o-mini"], lab=lab)
found.judges      # per judge: accuracy (95% CI over items), position bias, cost, …
found.path        # judges.json, verdicts.csv, wrong.csv, report.html
check_judges(items_from_run("runs/…", "aligned"), ["gpt-4.1"], lab=lab)
estimate_judges("judge_pairs.jsonl", ["gpt-4.1"], lab=lab)   # what it would buy; nothing sent
"""

from evals.errors import JudgeItemsError
from evals.judge_accuracy._asking import VERDICT_COLUMNS
from evals.judge_accuracy._items import JudgeItem, JudgeItems, items_from_run, read_items
from evals.judge_accuracy._running import JudgeAccuracy, check_judges, estimate_judges
from evals.judge_accuracy._stats import PositionBias, Share, item_accuracy, wilson

__all__ = [
    "VERDICT_COLUMNS",
    "JudgeAccuracy",
    "JudgeItem",
    "JudgeItems",
    "JudgeItemsError",
    "PositionBias",
    "Share",
    "check_judges",
    "estimate_judges",
    "item_accuracy",
    "items_from_run",
    "read_items",
    "wilson",
]
