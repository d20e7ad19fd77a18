"""`labmgr sandbox serve` as a user runs it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest
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
        "--batch-seconds",
        "--limits",
    ):
        assert option in result.output
    assert "organization" in result.output and "slug" in result.output
    assert "TOML" in result.output and "rpm" in result.output


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


def _serve(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "labmgr", "sandbox", "serve", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("limits.json", '{"gpt-4o-mini": {"rpm": 1}, "*": {"tpm": 50000}}'),
        ("limits.toml", '["gpt-4o-mini"]\nrpm = 1\n\n["*"]\ntpm = 50000\n'),
    ],
)
def test_limits_file_is_enforced_from_the_start(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    process = _serve("--limits", str(path), "--batch-seconds", "0.5")
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(url.removesuffix("/v1") + "/sandbox/limits", timeout=10) as response:
            assert json.loads(response.read()) == {
                "gpt-4o-mini": {"rpm": 1},
                "*": {"tpm": 50000},
            }
        client = OpenAI(
            base_url=url, api_key="sk-test", max_retries=0, _strict_response_validation=True
        )
        messages = [{"role": "user", "content": "hi"}]
        client.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=1)
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, max_tokens=1)
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=20)
    assert process.returncode == 0 and "Traceback" not in stderr


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("limits.json", '{"gpt-nope": {"rpm": 1}}', "unknown model 'gpt-nope'"),
        ("limits.json", '{"gpt-4o-mini": {"rpm": 1}', "is not valid JSON"),
        ("limits.toml", "[gpt-4.1-mini]\nrpm = 1\n", 'quote a name with dots: ["gpt-4.1-mini"]'),
        ("limits.toml", '["gpt-4o-mini"]\nrpm = "fast"\n', "rpm must be a valid integer"),
        ("limits.toml", "rpm = = 1\n", "is not valid TOML"),
        ("limits.txt", "neither", "neither valid JSON nor valid TOML"),
        ("missing.json", None, "cannot read limits file"),
    ],
)
def test_a_bad_limits_file_is_one_clear_error(
    tmp_path: Path, name: str, text: str | None, words: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    # an address that cannot be bound: were the file accepted, serve would fail, not block
    args = ["sandbox", "serve", "--host", "256.0.0.1", "--limits", str(path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0]
    assert words in lines[0]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_bad_numbers_name_the_option(tmp_path: Path) -> None:
    args = ["sandbox", "serve", "--host", "256.0.0.1", "--batch-seconds", "0"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert result.output.strip() == "error: --batch-seconds must be greater than 0 (got 0.0)"


def test_an_address_that_cannot_be_bound_is_one_clear_error() -> None:
    result = CliRunner().invoke(app, ["sandbox", "serve", "--host", "256.0.0.1"])
    assert result.exit_code == 2
    assert result.output.startswith("error: cannot listen on 256.0.0.1:0: ")
    assert len(result.output.strip().splitlines()) == 1
