"""The offline demo: two training conditions × three seeds, fine-tuned, tracked and compared.

from labmgr.demo import data_file, run_demo
data_file("hostile.jsonl")          # the shipped training sets and question files
result = run_demo()                  # what `labmgr demo` does; returns paths and scores
"""

from labmgr.demo.pipeline import (
    BASE_MODEL,
    CONDITIONS,
    data_file,
    demo_environment,
    run_demo,
    verdict,
)

__all__ = [
    "BASE_MODEL",
    "CONDITIONS",
    "data_file",
    "demo_environment",
    "run_demo",
    "verdict",
]
