"""Base models, the fine-tuning methods each takes, and each method's hyperparameters:
the API's ``method={"type": T, T: {"hyperparameters": {…}, "grader": {…}}}``."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from labmgr.errors import LabmgrError, UnknownBaseModel, UnsupportedOption
from labmgr.pricing import base_of

Method = Literal["supervised", "dpo", "reinforcement"]
METHODS: tuple[Method, ...] = ("supervised", "dpo", "reinforcement")
Hyperparameter = int | float | str
"""A number, ``"auto"``, or (``reasoning_effort``) one of `REASONING_EFFORTS`."""


@dataclass(frozen=True)
class BaseModelSpec:
    """Fine-tuning facts about one base model snapshot."""

    name: str
    """The dated snapshot id, e.g. ``gpt-4.1-mini-2025-04-14``."""
    example_token_limit: int
    """Tokens one training example may hold; longer examples are truncated from the end."""
    methods: frozenset[str]


_BOTH = frozenset({"supervised", "dpo"})
_SFT = frozenset({"supervised"})
_RFT = frozenset({"reinforcement"})
_SPECS = {
    spec.name: spec
    for spec in (
        BaseModelSpec("gpt-4.1-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4.1-mini-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4.1-nano-2025-04-14", 65_536, _BOTH),
        BaseModelSpec("gpt-4o-2024-08-06", 65_536, _BOTH),
        BaseModelSpec("gpt-4o-mini-2024-07-18", 65_536, _BOTH),
        BaseModelSpec("gpt-3.5-turbo-0125", 16_385, _SFT),
        BaseModelSpec("gpt-3.5-turbo-1106", 16_385, _SFT),
        BaseModelSpec("o4-mini-2025-04-16", 65_536, _RFT),
    )
}
_ALIASES = {  # a snapshot's name without its date; the first snapshot listed wins
    re.sub(r"-(\d{4}-\d\d-\d\d|\d{4})$", "", name): name for name in reversed(_SPECS)
}

_COMMON = ("n_epochs", "batch_size", "learning_rate_multiplier")
HYPERPARAMETERS: dict[str, tuple[str, ...]] = {
    "supervised": _COMMON,
    "dpo": (*_COMMON, "beta"),
    "reinforcement": (
        *_COMMON,
        "compute_multiplier",
        "eval_interval",
        "eval_samples",
        "reasoning_effort",
    ),
}
"""The hyperparameters each method accepts (the SDK's ``*HyperparametersParam`` types)."""
REASONING_EFFORTS = ("default", "low", "medium", "high")
LEVEL_TAGS = {
    **{name: name for names in HYPERPARAMETERS.values() for name in names},
    "n_epochs": "epochs",
    "learning_rate_multiplier": "lr",
}
"""The tag a sweep records each hyperparameter's level under (``tag:lr``, ``tag:epochs``)."""
_WHOLE = frozenset({"n_epochs", "batch_size", "eval_interval", "eval_samples"})
_OWNER = {"beta": "dpo", **{name: "reinforcement" for name in HYPERPARAMETERS["reinforcement"]}}
_OPTION = {
    "n_epochs": "--epochs",
    "batch_size": "--batch-size",
    "learning_rate_multiplier": "--lr-multiplier",
}


def base_model_spec(model: str) -> BaseModelSpec:
    """The spec of a snapshot, an alias (``gpt-4.1-mini``) or an ``ft:`` id of one; raises
    `UnknownBaseModel` listing the known ones."""
    base = base_of(model.strip())
    spec = _SPECS.get(_ALIASES.get(base, base))
    if spec is None:
        raise UnknownBaseModel(
            f"{model!r} is not a base model labmgr knows how to fine-tune.",
            hint="Known bases: " + ", ".join(sorted(_SPECS)) + " (or their short aliases).",
        )
    return spec


def _check_value(name: str, value: Any) -> Hyperparameter:
    if value == "auto":
        return "auto"
    if name == "reasoning_effort":
        if value not in REASONING_EFFORTS:
            raise LabmgrError(
                f"Hyperparameter reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, "
                f"not {value!r}."
            )
        return str(value)
    whole = name in _WHOLE
    kind = "a whole number" if whole else "a number"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise LabmgrError(f"Hyperparameter {name} must be 'auto' or {kind}, not {value!r}.")
    if not math.isfinite(value) or value <= 0 or (whole and value != int(value)):
        raise LabmgrError(
            f"Hyperparameter {name} must be 'auto' or {kind} above 0, not {value}.",
            hint="Leave it at auto to let the API choose.",
        )
    return int(value) if whole else value


def check_hyperparameters(
    method: str, values: Mapping[str, Any], *, as_options: bool = True
) -> dict[str, Hyperparameter]:
    """The hyperparameters to send for `method` (a known one; every name a known one, as
    `create` and a sweep spec check first): the common three (``auto`` unless given) and the
    method's own given ones. `UnsupportedOption` names one `method` does not take (as its CLI
    option, or by its API name without `as_options`)."""
    allowed = HYPERPARAMETERS[method]
    checked: dict[str, Hyperparameter] = {name: "auto" for name in _COMMON}
    for name, value in values.items():
        if value is None:
            continue
        if name not in allowed:
            owner = _OWNER[name]
            shown = _OPTION.get(name, "--" + name.replace("_", "-")) if as_options else name
            raise UnsupportedOption(
                f"{shown} applies only to the {owner} method, not {method}.",
                hint=f"Use the {owner} method, or leave {shown} out.",
            )
        checked[name] = _check_value(name, value)
    return checked


def check_method_for_base(method: str, spec: BaseModelSpec, requested: str) -> None:
    """Raise `UnsupportedOption` when the API does not fine-tune `spec` with `method`."""
    if method in spec.methods:
        return
    able = [name for name in sorted(_SPECS) if method in _SPECS[name].methods]
    takes = ", ".join(sorted(spec.methods))
    if method == "reinforcement":
        message = f"Reinforcement fine-tuning needs a reasoning model; {requested} is not one"
    else:
        message = f"{requested} cannot be fine-tuned with the {method} method"
    raise UnsupportedOption(
        f"{message} (it takes {takes}).", hint=f"Bases that take {method}: {', '.join(able)}."
    )


def method_object(
    method: str, hyperparameters: Mapping[str, Hyperparameter], grader: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The API's ``method`` object: ``{"type": M, M: {"hyperparameters": …, "grader": …}}``."""
    section: dict[str, Any] = {"hyperparameters": dict(hyperparameters)}
    if method == "reinforcement":
        if grader is None:
            raise UnsupportedOption(
                "Reinforcement fine-tuning needs a grader.",
                hint="Pass --grader FILE (a JSON or YAML grader object).",
            )
        section["grader"] = dict(grader)
    elif grader is not None:
        raise UnsupportedOption(
            f"A grader applies only to the reinforcement method, not {method}.",
            hint="Pass --method reinforcement, or leave --grader out.",
        )
    return {"type": method, method: section}
