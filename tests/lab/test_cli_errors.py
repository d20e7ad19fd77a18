"""The command line's one error handler: every user error ends in `Error: <one sentence>`,
a hint, exit 1 and no traceback, whichever package raised it."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from evals.errors import QuestionFileError, UnknownModelError
from jobs_db.errors import DatabaseUnavailableError
from labmgr.cli.errors import cli_errors
from labmgr.errors import ConfigError


def _command_raising(error: Exception) -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @cli_errors
    def fail() -> None:
        raise error

    return app


@pytest.mark.parametrize(
    ("error", "first_line", "hint"),
    [
        (ConfigError("lab/config.toml:3: eval.max_retries: too big.", hint="Fix it."),
         "Error: lab/config.toml:3: eval.max_retries: too big.", "Fix it."),
        (QuestionFileError("q.yaml:4: question 'x': field 'type' is required"),
         "Error: q.yaml:4: question 'x': field 'type' is required",
         "Fix the question file and run again."),
        (UnknownModelError("model gpt-4o-minni does not exist at http://h/v1.", hint="Fix it."),
         "Error: model gpt-4o-minni does not exist at http://h/v1.", "Fix it."),
        (DatabaseUnavailableError("cannot reach the database at postgresql://h/lab"),
         "Error: cannot reach the database at postgresql://h/lab.", None),
        (PermissionError(13, "Permission denied", "/srv/lab/runs/x"),
         "Error: cannot use /srv/lab/runs/x: Permission denied.",
         "Check the path and its permissions."),
    ],
)  # fmt: skip
def test_every_error_base_is_one_sentence_and_exit_1(
    error: Exception, first_line: str, hint: str | None
) -> None:
    result = CliRunner().invoke(_command_raising(error), [])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert lines[0] == first_line
    assert lines[1:] == ([hint] if hint else [])
    assert "Traceback" not in result.output


def test_a_programming_error_is_not_dressed_up_as_a_user_error() -> None:
    result = CliRunner().invoke(_command_raising(KeyError("bug")), [])
    assert result.exit_code == 1 and isinstance(result.exception, KeyError)
