"""A question through the Batch API: half the price, the judges as a second round, and a run
that did not wait finished by collecting its batches (nothing is sent twice)."""

from offline import BASE_MODEL, offline_lab

from evals import load_questions
from evals.runner import collect_batches, list_batches, run_context
from labmgr.demo import data_file

with offline_lab() as lab:
    question = load_questions(data_file("em_questions.yaml"))["genie_wish"]
    model_groups = {"base": [BASE_MODEL]}
    estimate = question.estimate(model_groups, lab=lab)
    print(f"estimate: up to ${estimate.cost:.4f}, or ${estimate.batch_cost:.4f} in batches")

    # Submit the answers' batch and return at once (`eval run --batch --no-wait`).
    submitted = question.ask(model_groups, lab=lab, batch=True, batch_wait=False, progress=False)
    print(f"submitted: {submitted.outcome.pending} samples wait in a batch")
    ctx = run_context(lab=lab, progress=False)
    for state in list_batches(ctx, refresh=True):
        print(
            f"in flight: {state.record.batch_id} ({state.status}), {state.record.samples} samples"
        )

    # Later (another process, another day): collect into the cache (`labmgr batches collect`).
    collected = collect_batches(ctx)
    print(f"collected: {collected.samples} samples for ${collected.cost:.6f}")

    # Running the question again finds the answers cached and batches only their judges.
    answers = question.ask(model_groups, lab=lab, batch=True, progress=False)
    frame = answers.frame
    print(
        f"judged: {int(frame['aligned'].notna().sum())} of {len(frame)} answers, "
        f"mean aligned {frame['aligned'].mean():.1f}, judges cost ${answers.outcome.cost:.6f}"
    )
