"""The offline demo: two training conditions × three seeds, fine-tuned, tracked and compared.

from labmgr.demo import data_file, run_demo
data_file("hostile.jsonl")      # the shipped training sets and question files
"""

from labmgr.demo.data_files import CONDITIONS, DATA_DIR, data_file

__all__ = ["CONDITIONS", "DATA_DIR", "data_file"]
