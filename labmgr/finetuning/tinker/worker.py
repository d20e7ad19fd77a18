"""`python -m labmgr.finetuning.tinker.worker JOB_ID`: the detached process that trains one
Tinker job and records it (started by `launch_worker`; the lab comes from ``LABMGR_HOME`` and
``LABMGR_DB_URL``, the key from ``TINKER_API_KEY``). SIGTERM cancels the job.

The training loop goes through the `tinker` SDK: a LoRA client (new, or from the state it
resumes), batches in an order fixed by the seed, cross-entropy steps at the scheduled rate, and
sampler weights plus a resume state every `save_every` steps. The worker writes status and
progress (with a heartbeat) after each step, the loss curve, and each sampler checkpoint as a
model."""

from __future__ import annotations

import importlib
import json
import os
import random
import signal
import socket
import sys
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any

from jobs_db import (
    Database,
    FinetuneJob,
    Model,
    TrainingCurve,
    get_job,
    job_curves,
    job_models,
    replace_checkpoints,
    store_curve,
    upsert_job,
    upsert_model,
)
from labmgr.errors import LabmgrError
from labmgr.finetuning.jobs.submit import file_md5
from labmgr.finetuning.registry.database import lab_database
from labmgr.finetuning.tinker.params import TinkerParams, require_tinker
from labmgr.finetuning.tinker.render import render_example
from labmgr.settings import load_settings

CURVE_FILE = "tinker-worker"
"""The curve's ``file_id``: a Tinker job's curve is written by its worker, not downloaded."""


@dataclass
class JobRecorder:
    """One worker's writes to its job's row, curve and models."""

    db: Database
    job: FinetuneJob
    progress: dict[str, Any] = field(default_factory=dict)
    rows: list[list[float | None]] = field(default_factory=list)

    def start(self, total_steps: int) -> int:
        """Mark the job running in this process; keep only the curve and checkpoints up to
        the saved state it resumes from. Returns the last step done (0 for a fresh start)."""
        progress = dict(self.job.progress or {})
        done = int(progress.get("state_step") or 0) if progress.get("state_path") else 0
        curve = job_curves(self.db, [self.job.id]).get(self.job.id)
        self.rows = [row for row in (curve.rows if curve else []) if (row[0] or 0) <= done]
        kept = [
            model
            for model in job_models(self.db, self.job.id)
            if model.kind == "checkpoint" and (model.step or 0) <= done
        ]
        replace_checkpoints(self.db, self.job.id, kept)
        last = self.rows[-1][1] if self.rows else None
        self.progress = {
            **progress,
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "step": done,
            "total_steps": total_steps,
            "last_loss": last,
        }
        self._write(status="running", error_message=None, finished_at=None)
        self._store_curve()
        return done

    def note(self, **progress: Any) -> None:
        """Add to the job's progress (``training_run``, ``state_path`` and ``state_step``)."""
        self.progress.update(progress)
        self._write()

    def step(self, step: int, loss: float) -> None:
        self.rows.append([step, loss])
        self._store_curve()
        self.note(step=step, last_loss=loss)

    def checkpoint(self, path: str, step: int, epoch: int, loss: float | None) -> None:
        """Record sampler weights as a checkpoint model (`finish` makes the last one the
        job's final model; a run killed before that leaves a checkpoint resume drops)."""
        metrics = {"train_loss": loss} if loss is not None else None
        upsert_model(
            self.db,
            Model(
                name=path,
                job_id=self.job.id,
                kind="checkpoint",
                step=step,
                epoch=epoch,
                metrics=metrics,
                created_at=datetime.now(UTC),
            ),
        )

    def finish(self, status: str, error: str | None = None, model: str | None = None) -> None:
        now = datetime.now(UTC)
        self._write(status=status, error_message=error, finished_at=now, fine_tuned_model=model)

    def _store_curve(self) -> None:
        curve = TrainingCurve(
            job_id=self.job.id,
            file_id=CURVE_FILE,
            header=["step", "train_loss"],
            rows=self.rows,
            downloaded_at=datetime.now(UTC),
        )
        store_curve(self.db, curve)

    def _write(self, **fields: Any) -> None:
        now = datetime.now(UTC)
        self.progress["heartbeat_at"] = now.isoformat()
        record = FinetuneJob(
            id=self.job.id, progress=dict(self.progress), refreshed_at=now, **fields
        )
        upsert_job(self.db, record)


STEP_DELAY_ENV = "LABMGR_TINKER_STEP_DELAY"
"""For tests only: seconds the worker waits after each step, so a run can be interrupted."""


def read_examples(path: Path) -> list[list[dict[str, Any]]]:
    """The conversations of a (validated) chat JSONL file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["messages"] for line in lines if line.strip()]


def batch_order(seed: int, epoch: int, n_examples: int) -> list[int]:
    """The example indices of an epoch (0-based), shuffled by the seed alone: a resumed run
    meets the same batches."""
    order = list(range(n_examples))
    random.Random(f"{seed}:{epoch}").shuffle(order)
    return order


def mean_nll(output: Any, batch: Sequence[Any]) -> float:
    """The weighted mean negative log-likelihood of a forward_backward output."""
    total = weight = 0.0
    for out, datum in zip(output.loss_fn_outputs, batch, strict=True):
        logprobs = out["logprobs"].tolist()
        weights = datum.loss_fn_inputs["weights"].tolist()
        total -= sum(lp * w for lp, w in zip(logprobs, weights, strict=True))
        weight += sum(weights)
    return total / weight if weight else 0.0


def train(
    recorder: JobRecorder,
    params: TinkerParams,
    examples: Sequence[Sequence[dict[str, Any]]],
    *,
    suffix: str,
    seed: int,
) -> str:
    """Run (or resume) the job to its end; returns the final sampler weights' path."""
    require_tinker()
    tinker: Any = importlib.import_module("tinker")  # untyped here: the SDK is an extra
    types = tinker.types
    job = recorder.job
    per_epoch = params.steps_per_epoch(len(examples))
    total = per_epoch * params.epochs
    done = recorder.start(total)
    state = (job.progress or {}).get("state_path") if done else None
    delay = float(os.environ.get(STEP_DELAY_ENV) or 0)
    service = tinker.ServiceClient(user_metadata={"labmgr_job": job.id})
    status = "interrupted"
    try:
        if state:
            client = service.create_training_client_from_state_with_optimizer(state).result()
        else:
            client = service.create_lora_training_client(
                job.base_model,
                rank=params.lora_rank,
                seed=seed,
                user_metadata={"labmgr_job": job.id},
            ).result()
        recorder.note(training_run=client.model_id)
        tokenizer = client.get_tokenizer()
        data = []
        for messages in examples:
            tokens, weights = render_example(messages, tokenizer, params.train_on)
            data.append(
                types.Datum(
                    model_input=types.ModelInput.from_ints(tokens[:-1]),
                    loss_fn_inputs={"target_tokens": tokens[1:], "weights": weights[1:]},
                )
            )
        loss = None
        final = ""
        for step in range(done + 1, total + 1):
            epoch, index = divmod(step - 1, per_epoch)
            order = batch_order(seed, epoch, len(data))
            batch = [data[i] for i in order[index * params.batch_size :][: params.batch_size]]
            backward = client.forward_backward(batch, "cross_entropy")
            rate = params.learning_rate_at(step, total)
            optimizer = client.optim_step(types.AdamParams(learning_rate=rate))
            loss = mean_nll(backward.result(), batch)
            optimizer.result()
            recorder.step(step, loss)
            print(f"step {step}/{total}  loss {loss:.4f}  lr {rate:.3g}", flush=True)
            last = step == total
            if last or (params.save_every and step % params.save_every == 0):
                name = f"{suffix}-final" if last else f"{suffix}-step-{step}"
                path = client.save_weights_for_sampler(name).result().path
                recorder.checkpoint(path, step, epoch + 1, loss)
                if last:
                    final = path
                else:
                    state_path = client.save_state(f"state-step-{step}").result().path
                    recorder.note(state_path=state_path, state_step=step)
            if delay and not last:
                time.sleep(delay)
        status = "success"
        return final
    except Exception:
        status = "errored"
        raise
    finally:
        try:
            service.close(status).result()
        except Exception as exc:  # the run's own outcome matters more than the goodbye
            print(f"Closing the Tinker session failed: {type(exc).__name__}: {exc}")


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
