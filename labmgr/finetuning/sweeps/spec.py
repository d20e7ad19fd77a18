"""Reading a sweep spec (YAML): conditions × seeds × hyperparameter levels × base models.

```yaml
name: em-lr                      # default: the file name without .yaml
base: gpt-4.1-mini               # or a list of base models
conditions: {insecure: data/insecure.jsonl, secure: data/secure.jsonl}
seeds: 3                         # seeds 1, 2, 3; or a list such as [7, 8]
hyperparameters: {n_epochs: [1, 3], learning_rate_multiplier: [0.5, 2.0]}
```

Optional: method, validation, suffix (a template over the factor names), tags, wandb, grader,
key, provider (``openai`` or ``tinker``). Paths are relative to the spec's folder.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from labmgr.errors import InvalidSweepSpec, InvalidTrainingFile, LabmgrError
from labmgr.finetuning.methods import HYPERPARAMETERS, METHODS
from labmgr.finetuning.tinker.params import ALIASES as TINKER_ALIASES
from labmgr.finetuning.tinker.params import OPTIONS as TINKER_SETTINGS
from labmgr.finetuning.tinker.params import PROVIDER as TINKER

_SHAPE = ("name", "base", "conditions", "seeds", "hyperparameters", "method", "validation")
TOP_KEYS = (*_SHAPE, "suffix", "tags", "wandb", "grader", "key", "provider")
_OPENAI_ONLY = ("validation", "wandb", "grader")
HYPERPARAMETER_ALIASES = {
    "epochs": "n_epochs",
    "lr": "learning_rate_multiplier",
    "lr_multiplier": "learning_rate_multiplier",
    "batch": "batch_size",
}
_ALL_HYPERPARAMETERS = sorted({name for names in HYPERPARAMETERS.values() for name in names})
_FLOATS = {"learning_rate_multiplier", "beta", "compute_multiplier", "learning_rate"}


@dataclass
class SweepSpec:
    """A parsed sweep spec (paths resolved against the spec's folder)."""

    path: Path
    name: str
    bases: list[str]
    conditions: dict[str, Path]
    seeds: list[int]
    hyperparameters: dict[str, list[Any]] = field(default_factory=dict)
    """API hyperparameter name → its levels, in the spec's order."""
    spelled: dict[str, str] = field(default_factory=dict)
    """API hyperparameter name → the key the spec wrote (``lr`` for the multiplier)."""
    method: str = "supervised"
    validation: dict[str, Path] = field(default_factory=dict)
    suffix: str = "{condition}"
    tags: dict[str, str] = field(default_factory=dict)
    wandb: dict[str, Any] | None = None
    grader: Any = None
    """A mapping, or the path of a grader file."""
    key: str | None = None
    provider: str = "openai"
    """``openai``, or ``tinker``: its jobs train through the tinker SDK."""
    lines: dict[str, int] = field(default_factory=dict)
    """The line of each key path (``conditions.insecure``) in the file, for errors."""

    def error(self, key: str, message: str, hint: str | None = None) -> InvalidSweepSpec:
        """An error naming the spec file, the line of `key` and `key` itself."""
        line = self.lines.get(key) or self.lines.get(key.split(".")[0])
        where = f"{self.path}:{line}" if line else str(self.path)
        return InvalidSweepSpec(
            f"{where}: {key}: {message}", hint=hint or "Fix the spec; nothing was uploaded."
        )

    @contextmanager
    def blame(self, key: str) -> Iterator[None]:
        """A `LabmgrError` raised inside, as this spec's error at `key` (of a training file,
        its first error)."""
        try:
            yield
        except InvalidSweepSpec:
            raise
        except InvalidTrainingFile as exc:
            lines = exc.message.splitlines()
            count = getattr(exc.report, "error_count", 1)
            more = f" (and {count - 1} more errors)" if count > 1 else ""
            raise self.error(
                key,
                f"{lines[min(1, len(lines) - 1)].rstrip('.')}{more}.",
                f"Fix the file (`labmgr finetune validate {getattr(exc.report, 'path', '')}` "
                "lists every problem).",
            ) from None
        except LabmgrError as exc:
            raise self.error(key, exc.message.rstrip(".") + ".", exc.hint) from None

    def level_text(self, name: str, value: Any) -> str:
        """A level as its tag value: ``0.5`` and ``2.0`` for floats, ``3`` for whole numbers."""
        if value == "auto" or isinstance(value, str):
            return str(value)
        if name in _FLOATS:
            return repr(float(value))
        return str(int(value)) if float(value).is_integer() else repr(value)


def _lines(node: yaml.Node, prefix: str, out: dict[str, int]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            name = f"{prefix}.{key_node.value}" if prefix else str(key_node.value)
            out[name] = key_node.start_mark.line + 1
            _lines(value_node, name, out)


def _load(path: Path) -> tuple[Any, dict[str, int]]:
    if not path.is_file():
        kind = "a folder, not a file" if path.is_dir() else "not found"
        raise InvalidSweepSpec(
            f"Sweep spec {path} is {kind}.", hint="Pass the path of a YAML sweep spec."
        )
    try:
        text = path.read_text(encoding="utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InvalidSweepSpec(
            f"{path}{line}: not valid YAML ({problem}).", hint="Fix the YAML syntax."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InvalidSweepSpec(
            f"Cannot read sweep spec {path}: {reason}.", hint="Check the file."
        ) from None
    lines: dict[str, int] = {}
    if node is not None:
        _lines(node, "", lines)
    return data, lines


def _suggestion(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _relative(spec: SweepSpec, value: Any, key: str) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise spec.error(key, "must be the path of a JSONL file")
    file = Path(value).expanduser()
    return file if file.is_absolute() else spec.path.parent / file


def _levels(spec: SweepSpec, key: str, name: str, value: Any) -> list[Any]:
    levels = value if isinstance(value, list) else [value]
    if not levels:
        raise spec.error(key, "the list of levels is empty", "Give at least one level, e.g. [3].")
    for level in levels:
        if isinstance(level, bool) or not isinstance(level, int | float | str):
            raise spec.error(key, f"level {level!r} is not a number or 'auto'")
    texts = [spec.level_text(name, level) for level in levels]  # the cell's tag: 2 is 2.0
    if len(set(texts)) != len(levels):
        raise spec.error(key, "a level is repeated", "List each level once.")
    return levels


def _hyperparameters(spec: SweepSpec, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, Mapping):
        raise spec.error("hyperparameters", "must map names to levels")
    tinker = spec.provider == TINKER
    aliases = TINKER_ALIASES if tinker else HYPERPARAMETER_ALIASES
    known = list(TINKER_SETTINGS) if tinker else _ALL_HYPERPARAMETERS
    for raw, levels in value.items():
        key = f"hyperparameters.{raw}"
        name = aliases.get(str(raw), str(raw))
        if name not in known:
            raise spec.error(
                key,
                f"unknown {'Tinker setting' if tinker else 'hyperparameter'}"
                + _suggestion(str(raw), known + list(aliases)),
                f"Use one of {', '.join(known)} (or {', '.join(aliases)}).",
            )
        if name in spec.hyperparameters:
            raise spec.error(key, f"{name} is given twice (under two names)")
        spec.hyperparameters[name] = _levels(spec, key, name, levels)
        spec.spelled[name] = str(raw)


def _seeds(spec: SweepSpec, value: Any) -> list[int]:
    if value is None:
        return [1]
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise spec.error("seeds", f"must be at least 1, not {value}")
        return list(range(1, value + 1))
    if not isinstance(value, list):
        raise spec.error("seeds", "must be a count (3) or a list of seeds ([1, 2, 3])")
    if not value:
        raise spec.error("seeds", "the list of seeds is empty")
    if not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in value):
        raise spec.error("seeds", "seeds must be whole numbers from 0")
    if len(set(value)) != len(value):
        raise spec.error("seeds", "a seed is repeated")
    return list(value)


def _string_map(spec: SweepSpec, key: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, Mapping) or not value:
        raise spec.error(key, "must be a non-empty mapping")
    for name in value:
        if not isinstance(name, str) or not name.strip() or "=" in name:
            raise spec.error(key, f"name {name!r} must be text without '='")
    return dict(value)


def read_sweep_spec(spec: str | Path) -> SweepSpec:
    """Parse and check the structure of a sweep spec (files are checked when planning)."""
    path = Path(spec)
    data, lines = _load(path)
    if not isinstance(data, Mapping):
        raise InvalidSweepSpec(
            f"{path}: a sweep spec is a mapping with base, conditions, seeds and hyperparameters.",
            hint="See `labmgr finetune sweep --help` for an example.",
        )
    out = SweepSpec(path=path, name="", bases=[], conditions={}, seeds=[], lines=lines)
    for key in data:
        if key not in TOP_KEYS:
            suggestion = _suggestion(str(key), TOP_KEYS)
            raise out.error(str(key), f"unknown key{suggestion}", f"Keys: {', '.join(TOP_KEYS)}.")
    for required in ("base", "conditions"):
        if data.get(required) is None:
            raise InvalidSweepSpec(
                f"{path}: the key {required!r} is missing.",
                hint="A sweep needs base (the base model) and conditions (name: training file).",
            )
    for name, file in _string_map(out, "conditions", data["conditions"]).items():
        out.conditions[name] = _relative(out, file, f"conditions.{name}")
    out.provider = data.get("provider", "openai")
    if out.provider not in ("openai", TINKER):
        raise out.error("provider", "must be openai or tinker")
    out.method = data.get("method", "supervised")
    if out.method not in METHODS:
        raise out.error("method", f"must be one of {', '.join(METHODS)}")
    if out.provider == TINKER:
        given = [key for key in _OPENAI_ONLY if data.get(key) is not None]
        if out.method != "supervised" or given:
            wrong = given[0] if given else "method"
            raise out.error(
                wrong,
                "applies to OpenAI jobs only; Tinker jobs are supervised LoRA fine-tunes",
                f"Leave {wrong} out, or remove provider: tinker.",
            )
    validation = data.get("validation")
    if isinstance(validation, Mapping):
        for name, file in validation.items():
            if name not in out.conditions:
                raise out.error(
                    f"validation.{name}",
                    "is not one of the conditions",
                    f"Conditions: {', '.join(out.conditions)}.",
                )
            out.validation[name] = _relative(out, file, f"validation.{name}")
    elif validation is not None:
        out.validation = dict.fromkeys(out.conditions, _relative(out, validation, "validation"))
    if data.get("tags"):
        out.tags = {str(k): str(v) for k, v in _string_map(out, "tags", data["tags"]).items()}
    wandb = data.get("wandb")
    if wandb is not None and not isinstance(wandb, Mapping):
        raise out.error("wandb", "must be a mapping with project (entity, tags)")
    out.wandb = dict(wandb) if wandb is not None else None
    out.grader = data.get("grader")
    if out.grader is not None and not isinstance(out.grader, str | Mapping):
        raise out.error("grader", "must be a grader mapping or the path of a grader file")
    if isinstance(out.grader, str):
        out.grader = _relative(out, out.grader, "grader")
    _hyperparameters(out, data.get("hyperparameters"))
    for label in ("name", "suffix", "key"):  # a key left empty in YAML is None: refused too
        value = data.get(label)
        if label in data and (not isinstance(value, str) or not value.strip()):
            raise out.error(label, "must be non-empty text")
    out.name, out.key = str(data.get("name", path.stem)).strip(), data.get("key")
    out.suffix = str(data.get("suffix", out.suffix))
    bases = data["base"] if isinstance(data["base"], list) else [data["base"]]
    if not bases or not all(isinstance(base, str) and base.strip() for base in bases):
        raise out.error("base", "must be a model name or a non-empty list of names")
    out.bases = [base.strip() for base in bases]
    out.seeds = _seeds(out, data.get("seeds"))
    return out
