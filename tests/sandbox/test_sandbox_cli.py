"""`labmgr sandbox serve` as a user runs it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from openai import OpenAI
from typer.testing import CliRunner

from labmgr.cli.app import app
from labmgr.sandbox.server import is_loopback


def test_serve_prints_the_url_first_and_stops_on_sigterm(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "labmgr",
            "sandbox",
            "serve",
            "--port",
            "0",
            "--state-dir",
            str(tmp_path),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        client = OpenAI(
            base_url=url, api_key="sk-test", max_retries=0, _strict_response_validation=True
        )
        assert client.models.list().data
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0
    assert "Traceback" not in stderr


def test_help_explains_every_option() -> None:
    result = CliRunner().invoke(app, ["sandbox", "serve", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in (
        "--host",
        "--port",
        "--job-seconds",
        "--latency-ms",
        "--jitter-ms",
        "--state-dir",
        "--accounts",
    ):
        assert option in result.output
    assert "organization" in result.output and "slug" in result.output


def test_bad_accounts_file_is_an_error_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "accounts.yaml"
    path.write_text("accounts: 3\n")
    result = CliRunner().invoke(app, ["sandbox", "serve", "--accounts", str(path)])
    assert result.exit_code == 2
    assert str(path) in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_only_loopback_hosts_count_as_private() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
