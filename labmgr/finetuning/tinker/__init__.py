"""Fine-tuning on Tinker: jobs trained by a detached worker process through the official
`tinker` SDK (the optional extra ``labmgr[tinker]``), recorded in the lab's database like
OpenAI jobs. See docs/design/tinker-jobs.md.

`create_tinker` checks and starts jobs; `labmgr.finetuning.update`, `cancel` and `resume`
act on them through `control`. Only the worker imports `tinker`.
"""

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
