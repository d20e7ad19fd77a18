"""Judge accuracy (docs/judge-accuracy.md): how well judge models grade labelled items (pairs,
answers with a gold score or label, or a run's human labels), asked through the run pipeline."""

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
