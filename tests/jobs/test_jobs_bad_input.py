"""A sweep of bad input across the job-side commands (init, info, keys, finetune, jobs,
models, db): each ends in exit status 1 and one ``Error:`` sentence that names the file,
folder, job, model, URL or option at fault — never a traceback, OS errors included."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from jobs.conftest import JobsLab, requests_of, training_file
from typer.testing import CliRunner

from jobs_db import FinetuneJob, open_database, upsert_job
from labmgr.cli.app import app
from labmgr.settings import init_lab

runner = CliRunner()


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder in which creating a file fails: a read-only folder, or for root (whom
    permissions do not stop) a folder of the kernel's read-only /sys tree."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys/kernel"), Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    raise AssertionError("no unwritable folder found to test with")


@dataclass
class Sweep:
    """Files, labs and URLs the bad inputs refer to."""

    lab: JobsLab
    data: Path
    unreachable: str
    unwritable: Path
    labs: dict[str, Path] = field(default_factory=dict)

    def file(self, name: str) -> str:
        return str(self.data / name)


def _write_text_files(data: Path) -> None:
    good = training_file(data / "good.jsonl").read_bytes()
    text = good.decode()
    (data / "good.txt").write_bytes(good)
    (data / "utf16.jsonl").write_bytes(text.encode("utf-16"))
    (data / "utf16-nobom.jsonl").write_bytes(text.encode("utf-16-le"))
    (data / "utf32.jsonl").write_bytes(text.encode("utf-32"))
    (data / "latin1.jsonl").write_bytes(text.replace("Question", "Qüestion").encode("latin-1"))
    (data / "bom.jsonl").write_bytes(codecs.BOM_UTF8 + good)
    (data / "malformed.jsonl").write_text(text + "{not json\n")
    training_file(data / "three.jsonl", n=3)
    (data / "empty.jsonl").write_bytes(b"")
    (data / "folder.jsonl").mkdir()
    registry = data / "registry"
    registry.mkdir()
    (registry / "jobs.jsonl").write_text('{"id": "ftjob-1"}\n{broken\n')
    latin = data / "latin-registry"
    latin.mkdir()
    (latin / "jobs.jsonl").write_bytes('{"id": "ftjob-é"}\n'.encode("latin-1"))


def _labs(root: Path) -> dict[str, Path]:
    labs = {}
    for name in ("damaged", "empty", "folder-db", "bad-endpoint", "bad-config"):
        labs[name] = init_lab(root / name).home
    (labs["damaged"] / "labmgr.db").write_bytes(b"this is not a SQLite database\n" * 100)
    (labs["empty"] / "labmgr.db").write_bytes(b"")
    (labs["folder-db"] / "labmgr.db").mkdir()
    (labs["bad-endpoint"] / "config.toml").write_text(
        '[endpoints.local]\nbase_url = "localhost:8000/v1"\nkey_env = "LOCAL_API_KEY"\n'
    )
    (labs["bad-config"] / "config.toml").write_text("[eval\nmax_retries = 2\n")
    return labs


@pytest.fixture
def sweep(sqlite_jobs_lab: JobsLab, tmp_path: Path, closed_port: int) -> Sweep:
    data = sqlite_jobs_lab.files
    _write_text_files(data)
    with open_database(sqlite_jobs_lab.settings.db_url) as db:
        for job_id in ("ftjob-abcRunning1", "ftjob-abcRunning2"):
            upsert_job(
                db,
                FinetuneJob(
                    id=job_id,
                    status="running",
                    suffix="sweep",
                    key_env="OPENAI_API_KEY",
                    project_id="proj_alpha",
                ),
            )
    return Sweep(
        lab=sqlite_jobs_lab,
        data=data,
        unreachable=f"http://127.0.0.1:{closed_port}/v1",
        unwritable=_unwritable_folder(tmp_path),
        labs=_labs(tmp_path / "labs"),
    )


Args = Callable[[Sweep], list[str]]
Env = Callable[[Sweep], dict[str, str | None]]


@dataclass(frozen=True)
class Case:
    name: str
    args: Args
    names: Callable[[Sweep], str]
    """What the error must name (a path, id, URL, option or value)."""
    env: Env = lambda s: {}


def _home(lab: str, *args: str) -> Args:
    return lambda s: ["--home", str(s.labs[lab]), *args]


_NO_DB_URL: Env = lambda s: {"LABMGR_DB_URL": None}  # noqa: E731
_UNREACHABLE: Env = lambda s: {"OPENAI_BASE_URL": s.unreachable}  # noqa: E731
_CREATE = ["finetune", "create"]
_BASE = ["--base", "gpt-4.1-mini"]

CASES = [
    # init
    Case("init in a file", lambda s: ["init", s.file("good.jsonl")], lambda s: "good.jsonl"),
    Case(
        "init under a file",
        lambda s: ["init", s.file("good.jsonl") + "/lab"],
        lambda s: "good.jsonl/lab",
    ),
    Case(
        "init in a read-only folder",
        lambda s: ["init", str(s.unwritable / "lab")],
        lambda s: str(s.unwritable / "lab"),
    ),
    # info
    Case(
        "--home that does not exist", lambda s: ["--home", s.file("nope"), "info"], lambda s: "nope"
    ),
    Case(
        "--home that is a file",
        lambda s: ["--home", s.file("good.jsonl"), "info"],
        lambda s: "good.jsonl",
    ),
    Case(
        "OPENAI_BASE_URL without a scheme",
        lambda s: ["info"],
        lambda s: "OPENAI_BASE_URL",
        lambda s: {"OPENAI_BASE_URL": "127.0.0.1:8000/v1"},
    ),
    Case(
        "endpoint base_url without a scheme",
        _home("bad-endpoint", "info"),
        lambda s: "endpoints.local.base_url",
        _NO_DB_URL,
    ),
    Case("config that is not TOML", _home("bad-config", "info"), lambda s: "config.toml"),
    # keys
    Case(
        "keys without any key",
        lambda s: ["keys"],
        lambda s: "OPENAI_API_KEY",
        lambda s: {"OPENAI_API_KEY": None},
    ),
    Case(
        "keys at an unreachable endpoint", lambda s: ["keys"], lambda s: s.unreachable, _UNREACHABLE
    ),
    Case(
        "keys with an ftp:// base URL",
        lambda s: ["keys"],
        lambda s: "ftp://example.org/v1",
        lambda s: {"OPENAI_BASE_URL": "ftp://example.org/v1"},
    ),
    Case(
        "keys with a key the endpoint rejects",
        lambda s: ["keys"],
        lambda s: "OPENAI_API_KEY",
        lambda s: {"OPENAI_API_KEY": "sk-test-not-an-account"},
    ),
    # finetune validate
    Case(
        "validate a missing file",
        lambda s: ["finetune", "validate", s.file("nope.jsonl")],
        lambda s: "nope.jsonl",
    ),
    Case(
        "validate a folder",
        lambda s: ["finetune", "validate", s.file("folder.jsonl")],
        lambda s: "folder.jsonl",
    ),
    Case(
        "validate a path under a file",
        lambda s: ["finetune", "validate", s.file("good.jsonl") + "/x.jsonl"],
        lambda s: "good.jsonl/x.jsonl",
    ),
    Case(
        "validate a .txt file",
        lambda s: ["finetune", "validate", s.file("good.txt")],
        lambda s: "good.txt",
    ),
    Case(
        "validate UTF-16",
        lambda s: ["finetune", "validate", s.file("utf16.jsonl")],
        lambda s: "UTF-16",
    ),
    Case(
        "validate UTF-16 without a BOM",
        lambda s: ["finetune", "validate", s.file("utf16-nobom.jsonl")],
        lambda s: "UTF-16",
    ),
    Case(
        "validate UTF-32",
        lambda s: ["finetune", "validate", s.file("utf32.jsonl")],
        lambda s: "UTF-32",
    ),
    Case(
        "validate Latin-1",
        lambda s: ["finetune", "validate", s.file("latin1.jsonl")],
        lambda s: "Latin-1",
    ),
    Case(
        "validate a UTF-8 BOM",
        lambda s: ["finetune", "validate", s.file("bom.jsonl")],
        lambda s: "byte-order mark",
    ),
    Case(
        "validate a malformed line",
        lambda s: ["finetune", "validate", s.file("malformed.jsonl")],
        lambda s: "malformed.jsonl:13:",
    ),
    Case(
        "validate too few examples",
        lambda s: ["finetune", "validate", s.file("three.jsonl")],
        lambda s: "three.jsonl",
    ),
    Case(
        "validate an empty file",
        lambda s: ["finetune", "validate", s.file("empty.jsonl")],
        lambda s: "empty.jsonl",
    ),
    Case(
        "validate against an unknown base",
        lambda s: ["finetune", "validate", s.file("good.jsonl"), "--base", "gpt-9"],
        lambda s: "gpt-9",
    ),
    Case(
        "validate chat data as dpo",
        lambda s: ["finetune", "validate", s.file("good.jsonl"), "--method", "dpo"],
        lambda s: "good.jsonl",
    ),
    # finetune create
    Case(
        "create with infinite epochs",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--epochs", "inf"],
        lambda s: "n_epochs",
    ),
    Case(
        "create with 1.5 epochs",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--epochs", "1.5"],
        lambda s: "n_epochs",
    ),
    Case(
        "create with batch size 0",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--batch-size", "0"],
        lambda s: "batch_size",
    ),
    Case(
        "create with a NaN learning rate",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--lr-multiplier", "nan"],
        lambda s: "learning_rate_multiplier",
    ),
    Case(
        "create with an unset key variable",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--key", "OPENAI_API_KEY_NOPE"],
        lambda s: "OPENAI_API_KEY_NOPE",
    ),
    Case(
        "create with a malformed tag",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--tag", "oops"],
        lambda s: "oops",
    ),
    Case(
        "create with a 65-character suffix",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--suffix", "s" * 65],
        lambda s: "s" * 65,
    ),
    Case(
        "create with a missing validation file",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE, "--validation-file", s.file("v.jsonl")],
        lambda s: "v.jsonl",
    ),
    Case(
        "create from a .txt file",
        lambda s: [*_CREATE, s.file("good.txt"), *_BASE],
        lambda s: "good.txt",
    ),
    Case(
        "create from UTF-16",
        lambda s: [*_CREATE, s.file("utf16.jsonl"), *_BASE],
        lambda s: "UTF-16",
    ),
    Case(
        "create at an unreachable endpoint",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE],
        lambda s: s.unreachable,
        _UNREACHABLE,
    ),
    Case(
        "create with the database in a read-only folder",
        lambda s: [*_CREATE, s.file("good.jsonl"), *_BASE],
        lambda s: str(s.unwritable),
        lambda s: {"LABMGR_DB_URL": f"sqlite:///{s.unwritable}/lab.db"},
    ),
    # finetune cancel
    Case(
        "cancel an unknown job",
        lambda s: ["finetune", "cancel", "ftjob-nope"],
        lambda s: "ftjob-nope",
    ),
    Case("cancel an empty id", lambda s: ["finetune", "cancel", ""], lambda s: "job id"),
    Case(
        "cancel an ambiguous prefix",
        lambda s: ["finetune", "cancel", "ftjob-abc"],
        lambda s: "ftjob-abcRunning1",
    ),
    Case(
        "cancel at an unreachable endpoint",
        lambda s: ["finetune", "cancel", "ftjob-abcRunning1"],
        lambda s: s.unreachable,
        _UNREACHABLE,
    ),
    # jobs
    Case("show an unknown job", lambda s: ["jobs", "show", "ftjob-nope"], lambda s: "ftjob-nope"),
    Case(
        "show an ambiguous short id",
        lambda s: ["jobs", "show", "ftjob-a…"],
        lambda s: "ftjob-abcRunning2",
    ),
    Case(
        "list an unknown status", lambda s: ["jobs", "list", "--status", "done"], lambda s: "done"
    ),
    Case("list a malformed tag", lambda s: ["jobs", "list", "--tag", "oops"], lambda s: "oops"),
    Case("import from nowhere", lambda s: ["jobs", "import"], lambda s: "--from-api"),
    Case(
        "import a missing llmcomp folder",
        lambda s: ["jobs", "import", "--llmcomp", s.file("nope")],
        lambda s: "nope",
    ),
    Case(
        "import a file as an llmcomp folder",
        lambda s: ["jobs", "import", "--llmcomp", s.file("good.jsonl")],
        lambda s: "good.jsonl",
    ),
    Case(
        "import a malformed llmcomp registry",
        lambda s: ["jobs", "import", "--llmcomp", s.file("registry")],
        lambda s: "jobs.jsonl:2",
    ),
    Case(
        "import a Latin-1 llmcomp registry",
        lambda s: ["jobs", "import", "--llmcomp", s.file("latin-registry")],
        lambda s: "jobs.jsonl",
    ),
    Case(
        "import from an unreachable endpoint",
        lambda s: ["jobs", "import", "--from-api"],
        lambda s: s.unreachable,
        _UNREACHABLE,
    ),
    Case(
        "update at an unreachable endpoint",
        lambda s: ["jobs", "update"],
        lambda s: s.unreachable,
        _UNREACHABLE,
    ),
    # models
    Case(
        "models as JSON and CSV", lambda s: ["models", "list", "--json", "--csv"], lambda s: "--csv"
    ),
    Case(
        "models with a malformed tag", lambda s: ["models", "list", "--tag", "x"], lambda s: "'x'"
    ),
    Case(
        "groups by an unknown key",
        lambda s: ["models", "groups", "--by", "colour"],
        lambda s: "colour",
    ),
    # db
    Case(
        "db info on a damaged file",
        _home("damaged", "db", "info"),
        lambda s: "labmgr.db",
        _NO_DB_URL,
    ),
    Case(
        "jobs on a damaged file", _home("damaged", "jobs", "list"), lambda s: "damaged", _NO_DB_URL
    ),
    Case("jobs on an empty file", _home("empty", "jobs", "list"), lambda s: "0 bytes", _NO_DB_URL),
    Case(
        "models on an empty file",
        _home("empty", "models", "list"),
        lambda s: "labmgr.db",
        _NO_DB_URL,
    ),
    Case(
        "db info on a folder", _home("folder-db", "db", "info"), lambda s: "labmgr.db", _NO_DB_URL
    ),
    Case(
        "db upgrade under a file",
        lambda s: ["db", "upgrade"],
        lambda s: "good.jsonl",
        lambda s: {"LABMGR_DB_URL": f"sqlite:///{s.file('good.jsonl')}/lab.db"},
    ),
    Case(
        "jobs on an unreachable PostgreSQL",
        lambda s: ["jobs", "list"],
        lambda s: f"127.0.0.1:{s.unreachable.split(':')[2].split('/')[0]}",
        lambda s: {
            "LABMGR_DB_URL": f"postgresql+psycopg://u@127.0.0.1:{s.unreachable.split(':')[2]}"
        },
    ),
    Case(
        "a database URL that is not one",
        lambda s: ["db", "info"],
        lambda s: "LABMGR_DB_URL",
        lambda s: {"LABMGR_DB_URL": "postgresql://user@host:port/db"},
    ),
    Case(
        "a database kind that does not exist",
        lambda s: ["db", "info"],
        lambda s: "nosuchdb",
        lambda s: {"LABMGR_DB_URL": "nosuchdb://x/y"},
    ),
]


def test_the_sweep_covers_every_job_side_command() -> None:
    shape = Sweep(
        lab=None,  # type: ignore[arg-type]
        data=Path("data"),
        unreachable="http://127.0.0.1:9/v1",
        unwritable=Path("read-only"),
        labs={name: Path(name) for name in ("damaged", "empty", "folder-db")}
        | {"bad-endpoint": Path("e"), "bad-config": Path("c")},
    )
    commands = set()
    for case in CASES:
        args = case.args(shape)
        if args[0] == "--home":
            args = args[2:]
        commands.add(args[0])
    assert len(CASES) >= 40
    assert commands == {"init", "info", "keys", "finetune", "jobs", "models", "db"}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_bad_input_ends_in_one_error_sentence(sweep: Sweep, case: Case) -> None:
    result = runner.invoke(app, case.args(sweep), env=case.env(sweep))
    stderr = result.stderr
    assert result.exit_code == 1, f"exit {result.exit_code}\n{result.output}"
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert stderr.startswith("Error: "), stderr
    assert stderr.count("Error:") == 1, stderr
    assert case.names(sweep) in stderr, stderr


def test_a_txt_file_is_refused_before_any_upload(sweep: Sweep) -> None:
    before = requests_of(sweep.lab.sandbox).get("files.create", 0)
    result = runner.invoke(app, [*_CREATE, sweep.file("good.txt"), *_BASE])
    assert result.exit_code == 1
    assert "*.jsonl" in result.stderr
    assert requests_of(sweep.lab.sandbox).get("files.create", 0) == before


def test_a_file_with_a_value_of_the_wrong_type_is_refused_on_its_line_before_any_upload(
    sweep: Sweep,
) -> None:
    path = training_file(sweep.data / "wrong-type.jsonl")
    odd = {"role": "user", "content": [{"type": ["text"], "text": "x"}]}
    line = json.dumps({"messages": [odd, {"role": "assistant", "content": "y"}]})
    path.write_text(path.read_text() + line + "\n")
    before = requests_of(sweep.lab.sandbox).get("files.create", 0)
    result = runner.invoke(app, [*_CREATE, str(path), *_BASE])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert f"{path}:13:" in result.stderr and "unknown content part type" in result.stderr
    assert requests_of(sweep.lab.sandbox).get("files.create", 0) == before


def test_an_empty_database_file_is_left_empty(sweep: Sweep) -> None:
    database = sweep.labs["empty"] / "labmgr.db"
    for args in (["jobs", "list"], ["db", "info"], ["models", "groups"]):
        runner.invoke(app, ["--home", str(sweep.labs["empty"]), *args], env=_NO_DB_URL(sweep))
    assert database.stat().st_size == 0
    home = ["--home", str(sweep.labs["empty"])]
    upgraded = runner.invoke(app, [*home, "db", "upgrade"], env=_NO_DB_URL(sweep))
    assert upgraded.exit_code == 0, upgraded.output
    listed = runner.invoke(app, [*home, "jobs", "list", "--json"], env=_NO_DB_URL(sweep))
    assert json.loads(listed.stdout) == []
    assert database.stat().st_size > 0


def test_usage_errors_are_one_message_too(sweep: Sweep) -> None:
    """Malformed options are click's usage errors (exit 2), still without a traceback."""
    for args in (
        [*_CREATE, sweep.file("good.jsonl"), *_BASE, "--epochs", "many"],
        ["finetune", "validate", sweep.file("good.jsonl"), "--method", "rl"],
        ["jobs", "update", "--concurrency", "0"],
        ["finetune", "validate", sweep.file("good.jsonl"), "--max-issues", "-1"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        assert result.stderr.count("Error:") == 1
