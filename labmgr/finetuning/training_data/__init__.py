"""Training files checked before they cost an upload: format, encoding, tokens and cost."""

from labmgr.finetuning.training_data.tokens import estimate_example_tokens, estimate_text_tokens
from labmgr.finetuning.training_data.validation import (
    MAX_FILE_BYTES,
    MIN_EXAMPLES,
    Issue,
    ValidationReport,
    validate_training_file,
)

__all__ = [
    "MAX_FILE_BYTES",
    "MIN_EXAMPLES",
    "Issue",
    "ValidationReport",
    "estimate_example_tokens",
    "estimate_text_tokens",
    "validate_training_file",
]
