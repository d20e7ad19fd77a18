"""Shared set-up for the examples: where to work, and two trained conditions to compare.

With `OPENAI_BASE_URL` set, an example uses your environment as it is: that endpoint, your
keys, your lab (found the usual way). Otherwise it starts the sandbox (an offline fake of
the OpenAI API) and a temporary lab, and points this process at them, so every example runs
anywhere without a network or a bill.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from labmgr.demo import data_file, demo_environment
from labmgr.sandbox import run_sandbox
from labmgr.settings import Settings, init_lab, load_settings

BASE_MODEL = "gpt-4.1-mini"


@contextmanager
def offline_lab(job_seconds: float = 1.0, keep: bool = False) -> Iterator[Settings]:
    """The lab to work in (see the module docstring); yields its settings, which the
    examples hand to every call (`lab=`) rather than letting each find the lab again.

    The temporary lab is deleted afterwards unless `keep` (for files worth opening later).
    """
    if os.environ.get("OPENAI_BASE_URL"):
        yield load_settings()
        return
    folder = tempfile.mkdtemp(prefix="labmgr-example-")
    try:
        with run_sandbox(job_seconds=job_seconds) as sandbox:
            home = init_lab(folder).home
            with demo_environment(home, sandbox.base_url):
                yield load_settings(home)
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def train_conditions(
    lab: Settings,
    conditions: tuple[str, ...] = ("hostile", "helpful"),
    seeds: int = 2,
    epochs: int = 3,
) -> None:
    """Fine-tune `seeds` replicas of each shipped training set in `lab`; wait for them."""
    from labmgr.finetuning import create, update

    for condition in conditions:
        create(
            data_file(f"{condition}.jsonl"),
            base_model=BASE_MODEL,
            suffix=condition,
            epochs=epochs,
            seed=1,
            seeds=seeds,
            settings=lab,
        )
    deadline = time.monotonic() + 120
    while update(settings=lab).still_running:
        if time.monotonic() > deadline:
            raise TimeoutError("fine-tuning jobs are still running after 120 s")
        time.sleep(0.5)


def scratch_dir(lab: Settings, name: str) -> Path:
    """A folder for an example's outputs, inside the lab's runs folder."""
    folder = lab.runs_dir / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder
