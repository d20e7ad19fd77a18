"""Fine-tuning on Tinker: jobs trained by a detached worker through the `tinker` SDK (extra
``labmgr[tinker]``), recorded like OpenAI jobs. See docs/design/tinker-jobs.md."""

from labmgr.finetuning.tinker.create import TinkerRequest, create_tinker, submit_tinker
from labmgr.finetuning.tinker.params import PROVIDER, TinkerParams, tinker_params

__all__ = [
    "PROVIDER",
    "TinkerParams",
    "TinkerRequest",
    "create_tinker",
    "submit_tinker",
    "tinker_params",
]
