"""A Tinker job's training settings (`TinkerParams`), checked before anything starts, and
what follows from them: steps per epoch, the learning rate at a step."""

from __future__ import annotations

import importlib.util
import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from labmgr.errors import LabmgrError

PROVIDER = "tinker"
LrSchedule = Literal["linear", "constant"]
TrainOn = Literal["assistant", "all"]
OPTIONS = {
    "epochs": "--epochs",
    "batch_size": "--batch-size",
    "learning_rate": "--learning-rate",
    "lora_rank": "--lora-rank",
    "lr_schedule": "--lr-schedule",
    "save_every": "--save-every",
    "train_on": "--train-on",
}
"""Each setting's option of `labmgr finetune create`."""
LEVEL_TAGS = {name: name for name in OPTIONS} | {"learning_rate": "lr"}
"""The tag a sweep records each setting's level under (``tag:lr``, ``tag:lora_rank``)."""
ALIASES = {"n_epochs": "epochs", "lr": "learning_rate", "batch": "batch_size", "rank": "lora_rank"}
"""Other names a sweep spec may give a setting."""


class TinkerParams(BaseModel):
    """How a Tinker job trains (stored as the job's ``hyperparameters_requested``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    epochs: Annotated[int, Field(ge=1)] = 1
    batch_size: Annotated[int, Field(ge=1)] = 32
    """Examples per optimizer step (the last batch of an epoch may be smaller)."""
    learning_rate: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 2e-4
    lora_rank: Annotated[int, Field(ge=1)] = 32
    lr_schedule: LrSchedule = "linear"
    """``linear`` decays from `learning_rate` towards 0 over the run; ``constant`` does not."""
    save_every: Annotated[int, Field(ge=0)] = 0
    """Steps between checkpoints (sampler weights and a resume state); 0: at the end only."""
    train_on: TrainOn = "assistant"
    """Which tokens count in the loss: assistant turns (per-message ``weight`` 0 leaves one
    out), or every message."""

    def steps_per_epoch(self, n_examples: int) -> int:
        return math.ceil(n_examples / self.batch_size)

    def learning_rate_at(self, step: int, total_steps: int) -> float:
        """The rate of optimizer step `step` (1-based) of `total_steps`."""
        if self.lr_schedule == "constant":
            return self.learning_rate
        return self.learning_rate * (1 - (step - 1) / total_steps)


def tinker_params(**values: object) -> TinkerParams:
    """`TinkerParams` from the given settings (None: the default); `LabmgrError` naming the
    option of a bad one."""
    given = {name: value for name, value in values.items() if value is not None}
    for name in given:
        if name not in OPTIONS:
            raise LabmgrError(f"{name!r} is not a Tinker setting; use {', '.join(OPTIONS)}.")
    try:
        return TinkerParams(**given)  # type: ignore[arg-type]
    except ValidationError as exc:
        error = exc.errors()[0]
        name = str(error["loc"][0]) if error["loc"] else "settings"
        raise LabmgrError(
            f"{OPTIONS.get(name, name)} {given.get(name)!r}: {error['msg'].lower()}.",
            hint="See `labmgr finetune create --help` for the Tinker options.",
        ) from None


def require_tinker() -> None:
    """Raise unless the `tinker` SDK can be imported (without importing it)."""
    try:
        found = importlib.util.find_spec("tinker") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise LabmgrError(
            "Training on Tinker needs the `tinker` package, which is not installed.",
            hint="Install the extra: pip install 'labmgr[tinker]'.",
        )
