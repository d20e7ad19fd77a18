"""Training files checked before they cost an upload: format, encoding, tokens and cost."""

from labmgr.finetuning.training_data.tokens import estimate_text_tokens
from labmgr.finetuning.training_data.validation import (
    MIN_EXAMPLES,
    ValidationReport,
    validate_training_file,
)

__all__ = ["MIN_EXAMPLES", "ValidationReport", "estimate_text_tokens", "validate_training_file"]
