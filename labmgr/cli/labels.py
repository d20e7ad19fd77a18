"""`labmgr labels export`, `serve` and `import`: a sample of a run's answers for people
to label, and their labels back into the run (agreement of judges and humans)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from labmgr.cli.errors import CommandGroup
from labmgr.cli.fitted_table import plain_columns, print_fitted
from labmgr.cli.output import JSON, interval, print_json, records, terminal

if TYPE_CHECKING:
    from evals.labels import LabelFormat

app = CommandGroup(
    help="Export answers for people to label, or label them in the browser; import the labels."
)


@app.command("export")
def export(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    n: int = typer.Option(200, min=1, help="How many answers to export."),
    by: str | None = typer.Option(
        None, help="Draw equally from each group, model, question or grid factor level."
    ),
    blind: bool = typer.Option(False, "--blind", help="Leave the model and group out of the file."),
    seed: int = typer.Option(0, help="Seed of the random draw."),
    file_format: str = typer.Option("csv", "--format", help="csv (spreadsheets) or jsonl."),
    out: Annotated[
        Path | None,
        typer.Option("--out", help="The file to write (default: RUN_DIR/labels-SEED.FORMAT)."),
    ] = None,
) -> None:
    """Write a stratified random sample of the run's answers with stable ids and an empty
    human_<score> column per score, for labellers."""
    from evals.labels import export_labels

    form = cast("LabelFormat", file_format)
    written = export_labels(run_dir, n=n, by=by, blind=blind, seed=seed, file_format=form, out=out)
    strata = ", ".join(f"{k}: {v}" for k, v in written.per_stratum.items())
    typer.echo(f"{written.rows} answers to label ({strata}) in {written.path}")


@app.command("import")
def import_(
    run_dir: Annotated[Path, typer.Argument(help="The run folder the labels belong to.")],
    file: Annotated[Path, typer.Argument(help="The labelled file (csv or jsonl).")],
    skip_bad: bool = typer.Option(False, "--skip-bad", help="Import the good rows, skip bad ones."),
    as_json: bool = JSON,
) -> None:
    """Read the labels into the run (human_labels.csv) and show how far each judge agrees
    with the humans: Spearman's rho and Cohen's kappa with 95% intervals. Every bad row is
    named; a file with one imports nothing unless --skip-bad."""
    from evals.labels import import_labels
    from evals.runs import disagreements

    done = import_labels(run_dir, file, skip_bad=skip_bad)
    agreement = done.run.agreement()
    if as_json:
        print_json(
            {
                "rows": done.rows,
                "labels": done.labels,
                "skipped": done.skipped,
                "agreement": [] if agreement is None else records(agreement),
                "disagreements": records(disagreements(done.run, 10)),
            }
        )
        return
    console = terminal()
    for problem in done.skipped:
        console.print(f"Skipped {problem}")
    console.print(f"Imported {done.labels} labels of {done.rows} answers.")
    if agreement is None:
        return
    headers = ("question", "score", "n", "judge", "human", "Spearman rho", "kappa", "bins")
    rows = [
        [
            "all questions" if row["question"] == "(all)" else str(row["question"]),
            str(row["score"]),
            str(int(row["n"])),
            f"{row['judge_mean']:.1f}",
            f"{row['human_mean']:.1f}",
            interval(row["spearman"], row["spearman_low"], row["spearman_high"], empty="n/a"),
            interval(row["kappa"], row["kappa_low"], row["kappa_high"], empty="n/a"),
            str(row["bins"]),
        ]
        for row in agreement.to_dict("records")
    ]
    title = "Judges against human labels (95% intervals)"
    print_fitted(console, plain_columns(*headers, right=headers[2:5]), rows, title=title)
    worst = disagreements(done.run, 5)
    if not worst.empty:
        console.print("Largest disagreements (judge vs human):")
        for row in worst.to_dict("records"):
            answer = str(row["answer"]).replace("\n", " ")
            console.print(
                f"  {row['id']} {row['question']} {row['score']}: judge "
                f"{row['judge']:.0f}, human {row['human']:.0f}: {answer[:80]}"
            )


@app.command("serve")
def serve(
    run_dir: Annotated[Path, typer.Argument(help="A run folder written by `labmgr eval run`.")],
    labeller: str = typer.Option(
        ...,
        help="Your name: labels go to RUN_DIR/labels/LABELLER.jsonl (letters, digits, . _ -).",
    ),
    score: str | None = typer.Option(
        None, help="The judge score to label (default: the run's first judge score)."
    ),
    n: int = typer.Option(200, min=1, help="How many answers to label (as labels export)."),
    by: str | None = typer.Option(
        None, help="Draw equally from each group, model, question or grid factor level."
    ),
    seed: int = typer.Option(0, help="Seed of the random draw (as labels export)."),
    port: int = typer.Option(0, help="Port on 127.0.0.1 (default: a free one)."),
) -> None:
    """Label answers in the browser, one at a time, blind to model, group and judge score:
    a page on 127.0.0.1 only, until Ctrl-C (or SIGTERM). On a 0-100 score keys 1-5 label 0,
    25, 50, 75, 100 (on a scale of whole numbers within 0-9 each digit labels itself); n
    types an exact number; arrows move, s skips, u clears, ? shows the keys. Each label is
    saved to RUN_DIR/labels/LABELLER.jsonl as it is made, and the page reopens at the first
    answer neither labelled nor skipped. Import with `labmgr labels import RUN_DIR
    RUN_DIR/labels/LABELLER.jsonl`."""
    from evals.labels import start_label_server

    server = start_label_server(
        run_dir, labeller=labeller, score=score, n=n, by=by, seed=seed, port=port
    )
    session = server.session
    before = session.labelled
    typer.echo(
        f"Labelling {len(session.items)} answers of {run_dir} ({session.score}, "
        f"{before} labelled so far) at {server.url} (Ctrl-C to stop)"
    )
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)  # `kill` as Ctrl-C
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.server_close()
    typer.echo(
        f"Stopped: {session.labelled} of {len(session.items)} answers labelled, saved in "
        f"{session.log.path} ({session.saved_now} saved since the start)"
    )
