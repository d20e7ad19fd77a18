"""A sweep (2 conditions × 2 seeds × 2 learning rates), its plan and cost, the jobs grouped
by their factor tags, and the training curves of each group's seeds."""

import time

from offline import BASE_MODEL, offline_lab, scratch_dir

from labmgr.demo import data_file
from labmgr.finetuning import (
    group_curves_figure,
    lab_model_groups,
    plan_sweep,
    save_figure,
    sweep,
    training_curves,
    update,
)

with offline_lab() as lab:
    folder = scratch_dir(lab, "sweep")
    spec = folder / "lr-sweep.yaml"
    spec.write_text(
        f"base: {BASE_MODEL}\n"
        f"conditions: {{hostile: {data_file('hostile.jsonl')}, "
        f"helpful: {data_file('helpful.jsonl')}}}\n"
        "seeds: 2\n"
        "hyperparameters: {n_epochs: 2, lr: [0.5, 2.0]}\n"
    )
    plan = plan_sweep(spec, settings=lab)  # reads and checks everything; uploads nothing
    print(
        f"plan: {len(plan.jobs)} jobs, {len(plan.new_jobs)} new, "
        f"estimated training cost ${plan.estimated_cost:.4f}"
    )

    created = sweep(spec, settings=lab).created
    print(f"created {len(created)} jobs, tagged e.g. {created[0].tag_dict}")
    while update(settings=lab).still_running:  # also stores each job's curves when it succeeds
        time.sleep(0.5)
    print(f"again: {len(sweep(spec, settings=lab).created)} new jobs")  # the sweep is idempotent

    groups = lab_model_groups(lab, by="tag:lr", base_model=BASE_MODEL, include_base=False)
    for lr, models in groups.items():
        print(f"group lr={lr}: {len(models)} model(s)")

    curves = training_curves(lab, by="tag:lr")  # one row per job and step
    last = curves.groupby(["group", "job_id"])["train_loss"].last().groupby("group").mean()
    print(f"curves: {len(curves)} rows; final train loss by lr: {last.round(3).to_dict()}")
    figure = save_figure(group_curves_figure(curves, "lr sweep"), folder / "curves.png")
    print(f"figure: {figure}")
