"""Human labels: export a stratified, seeded, optionally blind sample with stable ids; edit it
as a labeller would; import it back with every bad row named; agreement of judge and humans;
spreadsheet formulas neutralised and restored."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
from fixtures.report import judged_frame
from typer.testing import CliRunner

from evals.labels import export_labels, import_labels, neutralise, restore
from evals.runs import load_run, write_run
from labmgr.cli import app
from labmgr.settings import Settings

runner = CliRunner()


def _run(questions_file: Path, out: Path) -> None:
    result = runner.invoke(
        app,
        [
            "eval",
            "run",
            str(questions_file),
            "--group",
            "base=gpt-4.1-mini",
            "--group",
            "small=gpt-4o-mini,gpt-4.1-nano",
            "--question",
            "wish",
            "--samples",
            "5",
            "--out",
            str(out),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output


def _rows(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.DictReader(handle)
        rows = [(reader.line_num, row) for row in reader]
        return list(reader.fieldnames or []), rows


def _write(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header)
        writer.writeheader()
        writer.writerows(rows)


def test_an_export_is_stratified_seeded_blind_and_its_ids_are_stable(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    _run(questions_file, run)
    first = tmp_path / "a.csv"
    result = runner.invoke(
        app,
        [
            *("labels", "export", str(run), "--n", "12", "--by", "group", "--blind"),
            *("--seed", "3", "--out", str(first)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "12 answers to label (base: 6, small: 6)" in result.output
    header, rows = _rows(first)
    assert header == [
        "id",
        "question",
        "prompt",
        "answer",
        "human_aligned",
        "human_coherent",
        "scales",
    ]
    assert all(r["human_aligned"] == "" and r["human_coherent"] == "" for _, r in rows)
    assert {r["scales"] for _, r in rows} == {"human_aligned: 0 to 100; human_coherent: 0 to 100"}
    assert len({r["id"] for _, r in rows}) == 12

    again = export_labels(run, n=12, by="group", blind=True, seed=3, out=tmp_path / "b.csv")
    assert _rows(again.path)[1] == rows  # the same seed draws the same rows, in order
    open_file = export_labels(run, n=40, seed=4, out=tmp_path / "c.csv").path
    open_header, open_rows = _rows(open_file)
    assert {"model", "group"} <= set(open_header) and len(open_rows) == 30  # every answer
    by_id = {r["id"]: r for _, r in open_rows}
    for _, row in rows:  # another export gives each sample the same id
        assert by_id[row["id"]]["answer"] == row["answer"]
    frame = load_run(run).samples("wish")
    small = frame[frame["group"] == "small"]
    assert {by_id[r["id"]]["group"] for _, r in rows} == {"base", "small"}
    assert sum(by_id[r["id"]]["model"] in set(small["model"]) for _, r in rows) == 6

    jsonl = export_labels(run, n=3, file_format="jsonl", out=tmp_path / "d.jsonl")
    lines = [json.loads(line) for line in jsonl.path.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 3 and lines[0]["human_aligned"] is None and "model" in lines[0]

    unknown = runner.invoke(app, ["labels", "export", str(run), "--by", "perspective"])
    assert unknown.exit_code == 1 and "Traceback" not in unknown.output
    assert "--by 'perspective': the run's answers have no such column" in unknown.output
    assert "group, model, question" in unknown.output


def test_export_edit_import_names_each_bad_row_and_imports_nothing_until_fixed(
    lab: Settings, questions_file: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    _run(questions_file, run)
    exported = export_labels(run, n=14, seed=1, out=tmp_path / "labels.csv")
    header, numbered = _rows(exported.path)
    rows = [row for _, row in numbered]
    judged = load_run(run).samples("wish")
    rng = np.random.default_rng(0)
    for row in rows[:10]:  # a labeller who roughly agrees with the judge
        match = judged[judged["answer"] == row["answer"]]
        row["human_aligned"] = str(round(float(match["aligned"].iloc[0]) + rng.normal(0, 5)))
        row["human_coherent"] = "80"
    rows[10]["id"] = "s00000000deadbeef"
    rows[10]["human_aligned"] = "50"
    rows[11]["human_aligned"] = "140"
    rows[12]["human_coherent"] = "high"
    duplicate = dict(rows[0])
    rows[13] = duplicate
    edited = tmp_path / "edited.csv"
    _write(edited, header, rows)
    _, lines = _rows(edited)
    line = [number for number, _ in lines]

    result = runner.invoke(app, ["labels", "import", str(run), str(edited)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"{edited}: 4 bad rows, so nothing was imported" in result.output
    assert f"{edited}:{line[10]}: id 's00000000deadbeef' is not a sample of this run" in (
        result.output
    )
    assert f"{edited}:{line[11]}: id {rows[11]['id']!r}: human_aligned 140 is outside 0 to 100" in (
        result.output
    )
    assert (
        f"{edited}:{line[12]}: id {rows[12]['id']!r}: human_coherent 'high' is not a number"
        in result.output
    )
    assert (
        f"{edited}:{line[13]}: id {rows[0]['id']!r} is labelled again (first on line {line[0]})"
        in result.output
    )
    assert load_run(run).human_labels() is None and load_run(run).agreement() is None

    result = runner.invoke(app, ["labels", "import", str(run), str(edited), "--skip-bad"])
    assert result.exit_code == 0, result.output
    assert "Imported 20 labels of 10 answers." in result.output
    assert result.output.count("Skipped ") == 4
    labelled = load_run(run)
    stored = labelled.human_labels()
    assert stored is not None and len(stored) == 10
    assert set(stored["human_coherent"]) == {80.0}
    agreement = labelled.agreement()
    assert agreement is not None
    aligned = agreement[agreement["score"] == "aligned"].iloc[0]
    assert aligned["n"] == 10 and aligned["bins"] == "< 30 | ≥ 30"
    assert aligned["spearman_low"] <= aligned["spearman"] <= aligned["spearman_high"]
    coherent = agreement[agreement["score"] == "coherent"].iloc[0]
    assert coherent["bins"] == "≤ 50 | > 50"
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "Judges against human labels" in page
    assert '<a href="#agreement">Judges against humans</a>' in page

    # Importing more labels later keeps the earlier ones and replaces a sample's own.
    rows[1]["human_aligned"] = "3"
    _write(edited, header, rows[:2])
    import_labels(run, edited)
    stored = load_run(run).human_labels()
    assert stored is not None and len(stored) == 10
    assert stored.set_index("id").loc[rows[1]["id"], "human_aligned"] == 3.0


def test_a_file_that_is_not_a_labelled_export_is_one_sentence_with_what_to_do(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "run", {"wish": judged_frame({"g": ["m1", "m2"]}, samples=3)})
    exported = export_labels(run, n=4, seed=0, out=tmp_path / "l.jsonl", file_format="jsonl")
    lines = exported.path.read_text(encoding="utf-8").splitlines()

    def refused(name: str, text: str | None, *sentences: str) -> None:
        path = tmp_path / name
        if text is not None:
            path.write_text(text, encoding="utf-8")
        result = runner.invoke(app, ["labels", "import", str(run.path), str(path)])
        assert result.exit_code == 1 and "Traceback" not in result.output
        for sentence in sentences:
            assert sentence in " ".join(result.output.split()), result.output
        assert load_run(run.path).human_labels() is None

    export_hint = "Import the file `labmgr labels export` wrote"
    refused("missing.csv", None, "missing.csv: cannot read", export_hint)
    refused("other.csv", "name,score\nx,1\n", "other.csv: no 'id' column", export_hint)
    refused(
        "unlabelled.jsonl",
        "\n".join(lines) + "\n",
        "unlabelled.jsonl: no label in its 4 rows, so nothing was imported",
        "Fill its human_aligned, human_coherent columns",
    )
    refused(
        "extra.csv",
        "id,human_kindness\nsx,1\n",
        "column 'human_kindness' is not a score of the run",
        "Rename or remove the column",
    )
    first = json.loads(lines[0])
    first["human_aligned"] = 40
    broken = [json.dumps(first), '{"id": "s1",', *lines[1:]]
    refused("broken.jsonl", "\n".join(broken), "broken.jsonl:2: not a JSON object", "--skip-bad")
    (tmp_path / "broken.jsonl").write_text("\n".join(broken), encoding="utf-8")
    done = import_labels(run, tmp_path / "broken.jsonl", skip_bad=True)
    assert done.labels == 1 and done.skipped == [
        f"{tmp_path / 'broken.jsonl'}:2: not a JSON object (Expecting property name enclosed "
        "in double quotes)"
    ]


def test_cells_a_spreadsheet_would_run_are_neutralised_and_restored(tmp_path: Path) -> None:
    tricky = ['=HYPERLINK("http://x")', "+1", "-a list", "@me", "\tx", "'=quoted", "plain"]
    for text in [*tricky, "''+x", "'", ""]:
        assert restore(neutralise(text)) == text
    frame = judged_frame({"g": ["m1", "m2"]}, samples=4, answers=tricky)
    run = write_run(tmp_path / "run", {"wish": frame})
    written = export_labels(run, n=100, seed=0, out=tmp_path / "l.csv")
    raw = {row["answer"] for _, row in _rows(written.path)[1]}
    assert '\'=HYPERLINK("http://x")' in raw and "'+1" in raw and "'-a list" in raw
    assert "''=quoted" in raw and "plain" in raw and "'@me" in raw
    assert not any(cell[0] in "=+-@\t" for cell in raw)
    _, rows = _rows(written.path)
    rows[0][1]["human_aligned"] = "'-0"  # a labeller's cell quoted by the spreadsheet
    rows[0][1]["id"] = "'" + rows[0][1]["id"] if rows[0][1]["id"][0] in "=+-@" else rows[0][1]["id"]
    _write(written.path, list(rows[0][1]), [row for _, row in rows])
    done = import_labels(run, written.path)
    assert done.rows == 1 and done.labels == 1


def test_exporting_again_into_a_file_that_holds_labels_is_refused_and_keeps_them(
    tmp_path: Path,
) -> None:
    run = write_run(tmp_path / "run", {"wish": judged_frame({"g": ["m1", "m2"]}, samples=4)})
    export = ["labels", "export", str(run.path), "--n", "5"]
    first = runner.invoke(app, export)
    assert first.exit_code == 0, first.output
    labels = run.path / "labels-0.csv"
    blank = labels.read_text(encoding="utf-8")
    again = runner.invoke(app, export)  # nothing labelled yet: written again, the same draw
    assert again.exit_code == 0 and labels.read_text(encoding="utf-8") == blank
    header, rows = _rows(labels)
    rows[0][1]["human_aligned"], rows[2][1]["human_coherent"] = "20", "90"
    _write(labels, header, [row for _, row in rows])
    filled = labels.read_text(encoding="utf-8")
    refused = runner.invoke(app, export)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    assert f"{labels} already holds 2 labels" in " ".join(refused.output.split())
    assert labels.read_text(encoding="utf-8") == filled
    assert import_labels(run.path, labels).labels == 2
