"""Fine-tuning: training-file validation and the facts about fine-tunable base models.

from labmgr.finetuning import validate_training_file
report = validate_training_file("train.jsonl", base_model="gpt-4.1-mini")
report.raise_for_errors()          # InvalidTrainingFile with FILE:LINE: messages
"""

from labmgr.finetuning.base_models import BaseModelSpec, base_model_spec, known_base_models
from labmgr.finetuning.token_estimate import estimate_example_tokens, estimate_text_tokens
from labmgr.finetuning.validation import (
    MAX_FILE_BYTES,
    MIN_EXAMPLES,
    Issue,
    Method,
    ValidationReport,
    validate_training_file,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MIN_EXAMPLES",
    "BaseModelSpec",
    "Issue",
    "Method",
    "ValidationReport",
    "base_model_spec",
    "estimate_example_tokens",
    "estimate_text_tokens",
    "known_base_models",
    "validate_training_file",
]
