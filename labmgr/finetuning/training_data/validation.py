"""Validate a fine-tuning JSONL file before it costs an upload: `validate_training_file`."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
from collections.abc import Callable, Collection, Mapping
from functools import partial
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict

from labmgr.errors import InvalidTrainingFile, TrainingFileNotFound
from labmgr.finetuning.methods import METHODS, BaseModelSpec, Method, base_model_spec
from labmgr.finetuning.training_data.example_rules import (
    check_preference,
    check_reinforcement,
    check_supervised,
)
from labmgr.finetuning.training_data.message_rules import Findings
from labmgr.finetuning.training_data.tokens import estimate_example_tokens
from labmgr.pricing import Price, training_cost

MIN_EXAMPLES = 10
"""Fewest examples the API accepts in a training file (a validation file needs 1)."""
MAX_FILE_BYTES = 512 * 1024 * 1024
COST_REFERENCE_BASES = ("gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14")
"""Bases whose training cost is reported when no base model is given."""
_MAX_STORED_ISSUES = 10_000
_WIDE_BOMS = (  # longest first: the UTF-32-LE mark starts with the UTF-16-LE one
    (codecs.BOM_UTF32_LE, "UTF-32 (little-endian)"),
    (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)"),
    (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)"),
    (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)"),
)


class Issue(BaseModel):
    """One problem in a training file: its line (None: the whole file) and what is wrong,
    naming the field inside the example (``messages[2].content``)."""

    model_config = ConfigDict(frozen=True)

    line: int | None
    message: str

    def format(self, path: str | os.PathLike[str]) -> str:
        """``FILE:LINE: message`` (or ``FILE: message``)."""
        return f"{path}:{self.line}: {self.message}" if self.line else f"{path}: {self.message}"


class ValidationReport(BaseModel):
    """Everything `validate_training_file` found, and what training would cost."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    path: Path
    method: Method
    base_model: str | None
    """The base snapshot checked against (token limit, method, price), or None."""
    n_examples: int = 0
    """Non-blank lines (each should be one example)."""
    n_tokens: int = 0
    """Estimated tokens in all examples (see `estimate_example_tokens`)."""
    max_example_tokens: int = 0
    example_token_limit: int | None = None
    size_bytes: int = 0
    errors: list[Issue] = []
    """Problems that make the API reject the file (the first 10,000; `error_count` has all)."""
    warnings: list[Issue] = []
    """Problems worth a look that do not block training (the first 10,000)."""
    error_count: int = 0
    warning_count: int = 0
    cost_per_epoch: dict[str, float] = {}
    """Estimated USD per epoch by base model (the chosen base, or `COST_REFERENCE_BASES`)."""

    @property
    def valid(self) -> bool:
        return self.error_count == 0

    @property
    def training_cost_per_epoch(self) -> float | None:
        """Estimated USD per epoch on `base_model`, or None without a base or a price."""
        return self.cost_per_epoch.get(self.base_model) if self.base_model else None

    def raise_for_errors(self, limit: int = 10) -> None:
        """Raise `InvalidTrainingFile` listing the first `limit` errors, if there are any."""
        if self.valid:
            return
        shown = [issue.format(self.path) for issue in self.errors[:limit]]
        if self.error_count == 1 and shown:
            raise InvalidTrainingFile(
                shown[0].rstrip(".") + ".", hint="Fix it; nothing was uploaded.", report=self
            )
        more = self.error_count - len(shown)
        tail = [f"… and {more} more"] if more > 0 else []
        raise InvalidTrainingFile(
            f"{self.path} is not a valid {self.method} training file "
            f"({self.error_count} errors):\n" + "\n".join(shown + tail),
            hint=f"Run `labmgr finetune validate {self.path}` to see every problem.",
            report=self,
        )

    def _add(self, severity: str, line: int | None, message: str) -> None:
        error = severity == "error"
        issues = self.errors if error else self.warnings
        self.error_count += error
        self.warning_count += not error
        if len(issues) < _MAX_STORED_ISSUES:
            issues.append(Issue(line=line, message=message))


def _guess_encoding(line: bytes) -> str:
    try:
        line.decode("cp1252")
    except UnicodeDecodeError:
        return "an 8-bit encoding other than UTF-8"
    return "Windows-1252 or Latin-1"


def _decode(raw: bytes, number: int, report: ValidationReport) -> object | None:
    """The line's JSON value, or None (the problem reported); raises `UnicodeDecodeError`."""
    text = raw.decode("utf-8")
    if number == 1 and text.startswith("\ufeff"):
        # The API decodes UTF-8 and parses each line as JSON: a byte-order mark makes line 1
        # invalid JSON there (the sandbox behaves the same). Name it instead.
        report._add(
            "error",
            number,
            "the file starts with a UTF-8 byte-order mark (BOM), which the fine-tuning API "
            "rejects: save it as UTF-8 without a BOM",
        )
        text = text[1:]
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        report._add("error", number, f"not valid JSON: {exc.msg} (column {exc.colno})")
        return None


def _not_found(file: Path) -> TrainingFileNotFound:
    """Why `file` is not a file a person can fix: a folder, a path under a file, missing."""
    if file.is_dir():
        message = f"Training file {file} is a folder, not a file."
    else:
        existing = next((parent for parent in file.parents if parent.exists()), None)
        if existing is not None and not existing.is_dir():
            message = f"Training file {file} cannot exist: {existing} is a file, not a folder."
        else:
            message = f"Training file {file} does not exist."
    return TrainingFileNotFound(
        message, hint="Check the path (relative paths start from the current directory)."
    )


def _check_lines(
    handle: BinaryIO,
    method: Method,
    spec: BaseModelSpec | None,
    report: ValidationReport,
    item_fields: tuple[str, ...],
) -> bool:
    """Check every line into `report`; False for UTF-16/32 (one error, lines not read)."""
    head = handle.read(4)
    wide = next((name for mark, name in _WIDE_BOMS if head.startswith(mark)), None)
    if wide is not None:
        report._add(
            "error",
            None,
            f"the file is {wide} text (it starts with that byte-order mark); the fine-tuning "
            "API reads only UTF-8: save it as UTF-8",
        )
        return False
    handle.seek(0)
    checks: dict[str, Callable[[dict[str, Any], Findings], None]] = {
        "supervised": check_supervised,
        "dpo": check_preference,
        "reinforcement": partial(check_reinforcement, item_fields=item_fields),
    }
    check = checks[method]
    first_seen: dict[bytes, int] = {}
    not_utf8: tuple[int, UnicodeDecodeError, bytes] | None = None
    not_utf8_lines = 0
    for number, raw in enumerate(handle, start=1):
        if not raw.strip():
            report._add("warning", number, "blank line (remove it; the API may reject it)")
            continue
        if b"\x00" in raw:  # UTF-16 or UTF-32 without a byte-order mark
            wide = "UTF-32" if b"\x00\x00\x00" in raw else "UTF-16"
            report._add(
                "error",
                number,
                f"NUL bytes: the file looks like {wide} text without a byte-order mark; the "
                "fine-tuning API reads only UTF-8: save it as UTF-8",
            )
            return False
        report.n_examples += 1
        try:
            example = _decode(raw, number, report)
        except UnicodeDecodeError as exc:
            not_utf8 = not_utf8 or (number, exc, raw)
            not_utf8_lines += 1
            continue
        if example is None:
            continue
        if not isinstance(example, dict):
            kind = type(example).__name__.replace("dict", "object").replace("list", "array")
            report._add("error", number, f"each line must be a JSON object, got {kind}")
            continue
        findings = Findings()
        check(example, findings)
        for severity, message in findings.items:
            report._add(severity, number, message)
        tokens = estimate_example_tokens(example)
        report.n_tokens += tokens
        report.max_example_tokens = max(report.max_example_tokens, tokens)
        if spec is not None and tokens > spec.example_token_limit:
            report._add(
                "error",
                number,
                f"about {tokens:,} tokens, over the {spec.example_token_limit:,}-token "
                f"limit of {spec.name} (the API would cut the end of the example off)",
            )
        digest = hashlib.blake2b(
            json.dumps(example, sort_keys=True, ensure_ascii=False).encode(), digest_size=16
        ).digest()
        if digest in first_seen:
            report._add("warning", number, f"duplicate of the example on line {first_seen[digest]}")
        else:
            first_seen[digest] = number
    if not_utf8 is not None:  # every line that is not UTF-8 as one error
        number, error, raw = not_utf8
        more = f"; so are {not_utf8_lines - 1:,} more lines" if not_utf8_lines > 1 else ""
        report._add(
            "error",
            number,
            f"not UTF-8 text (byte 0x{raw[error.start]:02X} at column {error.start + 1}; the "
            f"file looks like {_guess_encoding(raw)}){more}: save the file as UTF-8",
        )
    return True


def validate_training_file(
    path: str | os.PathLike[str],
    method: Method = "supervised",
    base_model: str | None = None,
    *,
    min_examples: int = MIN_EXAMPLES,
    prices: Mapping[str, Price] | None = None,
    max_file_bytes: int = MAX_FILE_BYTES,
    item_fields: Collection[str] = (),
) -> ValidationReport:
    """Check every line of a JSONL training file against the API's rules, offline; a report
    whatever the file holds (`raise_for_errors` raises). Reinforcement examples must hold the
    `item_fields` the grader reads."""
    file = Path(path)
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, not {method!r}")
    spec = base_model_spec(base_model) if base_model else None
    if not file.is_file():
        raise _not_found(file)
    report = ValidationReport(path=file, method=method, base_model=spec.name if spec else None)
    if spec is not None:
        report.example_token_limit = spec.example_token_limit
        if method not in spec.methods:
            report._add("error", None, f"{spec.name} cannot be fine-tuned with method {method}")
    if file.suffix != ".jsonl":
        report._add(
            "error",
            None,
            f"the fine-tuning API accepts only files named *.jsonl: rename it "
            f"(e.g. {file.with_suffix('.jsonl').name})",
        )
    try:
        report.size_bytes = file.stat().st_size
        if report.size_bytes > max_file_bytes:
            report._add(
                "error",
                None,
                f"the file is {report.size_bytes:,} bytes; the limit is {max_file_bytes:,} "
                "bytes (split it or sample fewer examples)",
            )
            return report
        with file.open("rb") as handle:
            if not _check_lines(handle, method, spec, report, tuple(item_fields)):
                return report
    except OSError as exc:
        raise TrainingFileNotFound(
            f"Cannot read training file {file}: {exc.strerror or exc}.",
            hint="Check the file's permissions, or copy it somewhere readable.",
        ) from None

    if report.n_examples < min_examples:
        report._add(
            "error",
            None,
            f"{report.n_examples} example{'s' if report.n_examples != 1 else ''}; "
            f"fine-tuning needs at least {min_examples}",
        )
    for name in (spec.name,) if spec else COST_REFERENCE_BASES:
        dollars = training_cost(name, report.n_tokens, prices)
        if dollars is not None:
            report.cost_per_epoch[name] = dollars
    return report
