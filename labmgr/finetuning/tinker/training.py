"""A Tinker job's training loop through the `tinker` SDK: a LoRA client (new, or from the state
it resumes), batches in an order fixed by the seed, cross-entropy steps at the scheduled rate,
and sampler weights plus a resume state every `save_every` steps."""

from __future__ import annotations

import importlib
import json
import os
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from labmgr.finetuning.tinker.params import TinkerParams, require_tinker
from labmgr.finetuning.tinker.record import JobRecorder
from labmgr.finetuning.tinker.render import render_example

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
