"""The label server over loopback HTTP: each label saved as it is made, resuming where the
labeller stopped, two labellers at once, nothing lost when the server is killed, the log
imported by `labels import`, agreement as labels arrive, and bad input refused in a sentence."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from evals.errors import RunOptionsError
from evals.labels import LabelsFileError, digit_values, export_labels, import_labels
from evals.runs import load_run
from evals.stats import Scale
from labmgr.cli import app

from .conftest import call, label, log_events, serving

runner = CliRunner()


def test_the_page_gets_the_export_sample_blind_with_keys_on_the_score_scale(
    run_folder: Path, tmp_path: Path
) -> None:
    exported = export_labels(run_folder, n=10, by="group", seed=3, out=tmp_path / "x.csv")
    with open(exported.path, encoding="utf-8") as handle:
        export_ids = [line.split(",", 1)[0] for line in handle.read().splitlines()[1:]]
    with serving(run_folder, labeller="ana", n=10, by="group", seed=3) as server:
        status, page = call(server.url + "api/session")
    assert status == 200 and page["score"] == "aligned"  # the first judge score
    assert [item["id"] for item in page["items"]] == export_ids  # the same draw, in order
    item = page["items"][0]
    assert set(item) == {"id", "question", "prompt", "answer", "low", "high", "keys"}
    assert "ft:m" not in json.dumps(page) and "treated" not in json.dumps(page)  # blind
    assert item["keys"] == {"1": 0.0, "2": 25.0, "3": 50.0, "4": 75.0, "5": 100.0}
    assert digit_values(Scale(1, 5)) == {str(d): float(d) for d in range(1, 6)}
    assert digit_values(Scale(0, 1)) == {"0": 0.0, "1": 1.0}  # a class: its digit
    assert digit_values(Scale(1, 10))["5"] == 10.0  # not all single digits: five points


def test_labels_are_saved_as_made_and_a_new_server_opens_at_the_first_open_answer(
    run_folder: Path,
) -> None:
    with serving(run_folder, labeller="ana", n=8) as server:
        ids = [item["id"] for item in call(server.url + "api/session")[1]["items"]]
        label(server, ids[0], 75)
        label(server, ids[1], 25)
        label(server, ids[1], 50)  # changed: the last label wins
        label(server, ids[2], 0)
        assert label(server, ids[3], None, "skip") == {"saved": True, "labelled": 3, "skipped": 1}
        label(server, ids[2], None, "clear")
        assert len(log_events(run_folder, "ana")) == 6  # on disk before the server stops
    with serving(run_folder, labeller="ana", n=8) as server:
        page = call(server.url + "api/session")[1]
    assert page["labels"] == {ids[0]: 75.0, ids[1]: 50.0}
    assert page["skipped"] == [ids[3]]
    assert page["start"] == 2  # cleared, so open again; the skipped one comes after the rest
    events = log_events(run_folder, "ana")
    assert events[4] == {**events[4], "id": ids[3], "event": "skip", "labeller": "ana"}
    assert events[5]["human_aligned"] is None and events[5]["event"] == "clear"


def test_two_labellers_label_one_run_at_once_without_overwriting_each_other(
    run_folder: Path,
) -> None:
    assert "labels" not in load_run(run_folder).info  # no ids made yet: both servers make them
    managers = [serving(run_folder, labeller=name, n=6) for name in ("ana", "bo")]
    with ExitStack() as stack, ThreadPoolExecutor(2) as pool:
        ana, bo = pool.map(stack.enter_context, managers)  # started at the same moment
        assert ana.port != bo.port
        ids = [item["id"] for item in call(ana.url + "api/session")[1]["items"]]
        assert ids == [item["id"] for item in call(bo.url + "api/session")[1]["items"]]
        for sample in ids:
            label(ana, sample, 100)
            label(bo, sample, 0)
        with pytest.raises(
            RunOptionsError, match="another `labmgr labels serve` of labeller 'ana'"
        ):
            serving(run_folder, labeller="ana").__enter__()
    assert {e["human_aligned"] for e in log_events(run_folder, "ana")} == {100.0}
    assert {e["human_aligned"] for e in log_events(run_folder, "bo")} == {0.0}
    assert len(log_events(run_folder, "ana")) == len(log_events(run_folder, "bo")) == 6


def _start(run: Path, *args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "labmgr", "labels", "serve", str(run), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    line = process.stdout.readline()
    assert " at http://127.0.0.1:" in line, line + process.stderr.read() if process.stderr else ""
    return process, line.split(" at ", 1)[1].split(" ", 1)[0]


def test_a_killed_server_loses_no_label_and_ctrl_c_says_how_many_were_saved(
    run_folder: Path,
) -> None:
    process, url = _start(run_folder, "--labeller", "ana", "--n", "12")
    try:
        ids = [item["id"] for item in call(url + "api/session")[1]["items"]]
        for n, sample in enumerate(ids[:10]):
            status, _ = call(url + "api/label", {"id": sample, "event": "label", "value": n * 10})
            assert status == 200
    finally:
        process.kill()  # no chance to flush or close anything
        process.communicate(timeout=20)
    assert [e["human_aligned"] for e in log_events(run_folder, "ana")] == [
        n * 10.0 for n in range(10)
    ]
    process, url = _start(run_folder, "--labeller", "ana", "--n", "12")
    assert call(url + "api/session")[1]["start"] == 10
    call(url + "api/label", {"id": ids[10], "event": "label", "value": 60})
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in err
    assert "Stopped: 11 of 12 answers labelled, saved in" in out
    assert "(1 saved since the start)" in out


def test_the_label_log_is_what_labels_import_reads_and_agreement_matches_it(
    run_folder: Path,
) -> None:
    samples = load_run(run_folder).samples("wish")
    with serving(run_folder, labeller="ana", n=24) as server:
        assert call(server.url + "api/agreement") == (200, {"agreement": []})
        items = call(server.url + "api/session")[1]["items"]
        for n, item in enumerate(items):
            judged = samples[samples["answer"] == item["answer"]]["aligned"].mean()
            label(server, item["id"], 0 if n % 5 == 0 else round(float(judged)))
        label(server, items[0]["id"], None, "clear")
        label(server, items[1]["id"], None, "skip")  # labelled: a skip changes nothing
        live = call(server.url + "api/agreement")[1]["agreement"]
    assert [row["n"] for row in live] == [23]
    result = runner.invoke(
        app, ["labels", "import", str(run_folder), str(run_folder / "labels" / "ana.jsonl")]
    )
    assert result.exit_code == 0, result.output
    assert "Imported 23 labels of 23 answers." in result.output
    imported = load_run(run_folder).agreement()
    assert imported is not None
    row = imported[imported["score"] == "aligned"].iloc[0]
    assert live[0]["spearman"] == pytest.approx(row["spearman"])
    assert live[0]["kappa"] == pytest.approx(row["kappa"])
    labels = pd.read_csv(run_folder / "human_labels.csv")
    assert items[0]["id"] not in set(labels["id"]) and len(labels) == 23


def test_a_log_with_a_bad_line_is_named_by_line_on_import(run_folder: Path) -> None:
    with serving(run_folder, labeller="ana", n=3) as server:
        first = call(server.url + "api/session")[1]["items"][0]["id"]
        label(server, first, 40)
    log = run_folder / "labels" / "ana.jsonl"
    with log.open("a", encoding="utf-8") as handle:
        handle.write(
            '{"id": "s00000000deadbeef", "score": "aligned", "event": "label", '
            '"human_aligned": 10}\n'
        )
    with pytest.raises(LabelsFileError, match=rf"{log}:2: id 's00000000deadbeef' is not a"):
        import_labels(run_folder, log)
    log.write_text(log.read_text(encoding="utf-8") + '{"id": "s1", "ev', encoding="utf-8")
    with serving(run_folder, labeller="ana", n=3):  # a write cut short: the line is dropped
        pass
    assert log.read_text(encoding="utf-8").endswith("10}\n")


def test_a_log_saved_by_an_editor_without_its_last_newline_keeps_its_last_label(
    run_folder: Path,
) -> None:
    with serving(run_folder, labeller="ana", n=3) as server:
        ids = [item["id"] for item in call(server.url + "api/session")[1]["items"]]
        label(server, ids[0], 40)
        label(server, ids[1], 60)
    log = run_folder / "labels" / "ana.jsonl"
    log.write_text(log.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    with serving(run_folder, labeller="ana", n=3) as server:
        assert call(server.url + "api/session")[1]["labels"] == {ids[0]: 40.0, ids[1]: 60.0}
        label(server, ids[2], 80)
    assert [e["human_aligned"] for e in log_events(run_folder, "ana")] == [40, 60, 80]


def test_bad_requests_get_one_sentence_and_save_nothing(run_folder: Path) -> None:
    with serving(run_folder, labeller="ana", n=3) as server:
        sample = call(server.url + "api/session")[1]["items"][0]["id"]
        post = server.url + "api/label"
        cases = [
            ({"id": "s0", "event": "label", "value": 5}, "id 's0' is not an answer of this"),
            ({"id": sample, "event": "label", "value": 140}, "is outside 0 to 100"),
            ({"id": sample, "event": "label", "value": "high"}, "'high' is not a number"),
            ({"id": sample, "event": "guess", "value": 1}, "use one of label, clear, skip"),
        ]
        for body, words in cases:
            status, reply = call(post, body)
            assert status == 400 and words in reply["error"]
        status, reply = call(post, {"id": sample}, headers={"Content-Type": "text/plain"})
        assert status == 415  # a form of another site cannot post a label
        status, _ = call(server.url + "api/session", headers={"Host": "evil.example:80"})
        assert status == 403  # a rebound DNS name is not this server
    assert not (run_folder / "labels" / "ana.jsonl").exists()


def test_bad_command_lines_get_one_sentence(run_folder: Path, tmp_path: Path) -> None:
    def serve(*args: str) -> str:
        result = runner.invoke(app, ["labels", "serve", *args])
        assert result.exit_code != 0 and "Traceback" not in result.output
        return " ".join(result.output.split())

    assert "no such run folder" in serve(str(tmp_path / "none"), "--labeller", "ana")
    assert "--labeller '../x': use 1 to 64 letters" in serve(str(run_folder), "--labeller", "../x")
    assert "--score 'kind' is not a score of the run (its scores: aligned, coherent)" in serve(
        str(run_folder), "--labeller", "ana", "--score", "kind"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert f"--port {port}: the port is in use on 127.0.0.1" in serve(
            str(run_folder), "--labeller", "ana", "--port", str(port)
        )
    unjudged = load_run(run_folder).samples("wish")[["model", "group", "answer", "question"]]
    from evals.runs import write_run

    frame = unjudged.assign(
        paraphrase_ix=0, sample_ix=range(len(unjudged)), error=None, finish_reason="stop"
    )
    bare = write_run(tmp_path / "bare", {"wish": frame}, resamples=10).path
    assert "bare: no judge score to label" in serve(str(bare), "--labeller", "ana")
