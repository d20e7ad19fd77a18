"""Fine-tuning on Tinker: jobs trained by a detached worker through the `tinker` SDK (extra
``labmgr[tinker]``), recorded like OpenAI jobs. See docs/design/tinker-jobs.md. The names
below load on first use, so the command line's option tables (`tinker.params`) do not load
the OpenAI SDK."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from labmgr.finetuning.tinker.create import TinkerRequest, create_tinker, submit_tinker
    from labmgr.finetuning.tinker.params import PROVIDER, TinkerParams, tinker_params

_PART_OF = {
    "TinkerRequest": "create",
    "create_tinker": "create",
    "submit_tinker": "create",
    "PROVIDER": "params",
    "TinkerParams": "params",
    "tinker_params": "params",
}

__all__ = [
    "PROVIDER",
    "TinkerParams",
    "TinkerRequest",
    "create_tinker",
    "submit_tinker",
    "tinker_params",
]


def __getattr__(name: str) -> Any:
    part = _PART_OF.get(name)
    if part is None:
        raise AttributeError(f"module 'labmgr.finetuning.tinker' has no attribute {name!r}")
    return getattr(import_module(f"labmgr.finetuning.tinker.{part}"), name)
