"""`--help` of every command reads right: a flag shows no value placeholder, bracketed help
text survives, and the job-side options say what they take rather than a Python type."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from labmgr.cli.app import app

runner = CliRunner()
_JOB_SIDE = {"finetune", "jobs", "models", "db", "sandbox", "init", "info", "keys"}
_BRACKETED = re.compile(r"\[[^\]]*\]")


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    yield path, command
    for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
        if not sub.hidden:
            yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))


def _cases(paths: list[tuple[tuple[str, ...], Any]]) -> list[Any]:
    return [pytest.param(path, command, id=" ".join(path) or "labmgr") for path, command in paths]


def _help(path: tuple[str, ...]) -> str:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"})
    assert result.exit_code == 0, result.output
    return result.output


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_every_command_is_checked() -> None:
    names = {" ".join(path) for path, _ in COMMANDS}
    assert {"", "jobs list", "finetune create", "models groups", "eval run"} <= names


@pytest.mark.parametrize(("path", "command"), _cases(COMMANDS))
def test_no_flag_shows_a_value_placeholder(path: tuple[str, ...], command: Any) -> None:
    text = _help(path)
    assert "<bool>" not in text
    ctx = command.context_class(command, info_name=path[-1] if path else "labmgr")
    flags = [p for p in command.get_params(ctx) if getattr(p, "is_flag", False)]
    assert any("--help" in flag.opts for flag in flags)
    lines = [line.strip() for line in text.splitlines()]
    for flag in flags:
        record = flag.get_help_record(ctx)
        if record is None:  # hidden
            continue
        shown = record[0]
        assert "<" not in shown and not re.search(r" [A-Z]+$", shown), shown
        line = next((ln for ln in lines if ln.startswith(shown)), None)
        assert line is not None, f"{shown} is missing from the help of {path}"
        after = line[len(shown) :]
        assert after == "" or after.startswith("  "), f"{shown} is followed by {after!r}"


@pytest.mark.parametrize(("path", "command"), _cases(COMMANDS))
def test_bracketed_help_text_survives(path: tuple[str, ...], command: Any) -> None:
    shown = _flat(_help(path))
    texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
    for text in texts:
        for bracketed in _BRACKETED.findall(_flat(text)):
            assert bracketed in shown, f"{bracketed!r} is lost from the help of {path}"


def test_groups_json_help_keeps_its_brackets() -> None:
    assert "Print {group: [model, …]} as JSON." in _flat(_help(("models", "groups")))


@pytest.mark.parametrize(
    ("path", "command"), _cases([(p, c) for p, c in COMMANDS if not p or p[0] in _JOB_SIDE])
)
def test_job_side_options_name_what_they_take(path: tuple[str, ...], command: Any) -> None:
    """A value placeholder such as `<str>`, `<list[str]>` or `<int range>` is a Python type;
    these options say what they take instead (`<model>`, `<key=value>`, `<n|auto>`)."""
    options = [line for line in _help(path).splitlines() if line.strip().startswith("-")]
    for line in options:
        assert not re.search(r"<(str|int|float|list\[\w+\]|int range|float range)>", line), line


def test_epochs_say_they_take_a_number_or_auto() -> None:
    assert "--epochs <n|auto>" in _help(("finetune", "create"))


@pytest.mark.parametrize("group", [(), ("finetune",), ("jobs",), ("models",), ("db",)])
def test_job_side_command_lists_are_not_cut_short_at_80_columns(group: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*group, "--help"], env={"COLUMNS": "80"})
    listing = result.output.split("Commands:", 1)[1].splitlines()
    mine = [line for line in listing if line.split()[:1] and line.split()[0] in _JOB_SIDE | {
        "validate", "create", "cancel", "update", "list", "show", "import", "groups", "upgrade"
    }]  # fmt: skip
    assert mine
    assert not [line for line in mine if line.rstrip().endswith("...")]
