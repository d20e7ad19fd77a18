"""`python -m labmgr.finetuning.tinker.worker JOB_ID`: the detached process that trains one
Tinker job and records it (started by `launch_worker`; the lab comes from ``LABMGR_HOME`` and
``LABMGR_DB_URL``, the key from ``TINKER_API_KEY``). SIGTERM cancels the job."""

from __future__ import annotations

import signal
import sys
import traceback
from pathlib import Path
from types import FrameType

from jobs_db import get_job
from labmgr.errors import LabmgrError
from labmgr.finetuning.jobs.submit import file_md5
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.tinker.params import TinkerParams
from labmgr.finetuning.tinker.record import JobRecorder
from labmgr.finetuning.tinker.training import read_examples, train
from labmgr.settings import load_settings


class Stopped(BaseException):
    """SIGTERM arrived (`labmgr finetune cancel`)."""


def _stop(signum: int, frame: FrameType | None) -> None:
    raise Stopped


def _training_file(request: dict[str, str]) -> Path:
    path = Path(request["file"])
    if not path.is_file():
        raise LabmgrError(
            f"The training file {path} is gone.", hint="Put it back, then resume the job."
        )
    if file_md5(path) != request["md5"]:
        raise LabmgrError(
            f"The training file {path} changed since the job was created.",
            hint="Restore its content, or create a new job with the new file.",
        )
    return path


def run(job_id: str) -> int:
    """Train job `job_id` and record how it ended; the exit status (0: succeeded)."""
    signal.signal(signal.SIGTERM, _stop)
    settings = load_settings()
    with lab_database(settings) as db:
        job = get_job(db, job_id)
        if job is None or job.provider != "tinker":
            print(f"Job {job_id} is not a Tinker job of the lab {settings.home}.")
            return 2
        recorder = JobRecorder(db, job, progress=dict(job.progress or {}))
        try:
            params = TinkerParams(**(job.hyperparameters_requested or {}))
            examples = read_examples(_training_file(job.create_request or {}))
            final = train(
                recorder, params, examples, suffix=job.suffix or "tinker", seed=job.seed or 0
            )
        except Stopped:
            print("Stopped by SIGTERM: the job is cancelled.")
            recorder.finish("cancelled", "Cancelled: the worker was stopped (SIGTERM).")
            return 1
        except LabmgrError as exc:
            print(str(exc))
            recorder.finish("failed", exc.message + (f" {exc.hint}" if exc.hint else ""))
            return 1
        except Exception as exc:
            traceback.print_exc()
            recorder.finish("failed", f"{type(exc).__name__}: {exc}")
            return 1
        recorder.finish("succeeded", model=final)
        print(f"Done: {final}")
        return 0


if __name__ == "__main__":
    sys.exit(run(sys.argv[1]))
