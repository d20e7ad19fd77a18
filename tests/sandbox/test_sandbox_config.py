"""SandboxConfig: one checked settings object that a subprocess sandbox receives as JSON."""

from __future__ import annotations

from pathlib import Path

import pytest

from labmgr.sandbox import LimitTable, SandboxConfig, SandboxError, run_sandbox


def test_a_config_survives_its_json_form(tmp_path: Path) -> None:
    config = SandboxConfig.of(
        job_seconds=0.5,
        batch_seconds=2,
        latency_ms=3,
        state_dir=str(tmp_path / "state"),
        accounts=tmp_path / "accounts.yaml",
        limits={"gpt-4o-mini-2024-07-18": {"rpm": 10}, "projects": {"p": {"*": {"tpm": 9}}}},
        batch_max_requests=7,
    )
    assert config.state_dir == tmp_path / "state"
    assert config.limits.to_json() == {
        "gpt-4o-mini": {"rpm": 10},
        "projects": {"p": {"*": {"tpm": 9}}},
    }
    assert SandboxConfig.from_json(config.model_dump_json()) == config


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"job_seconds": 0}, "job_seconds must be greater than 0 (got 0)"),
        ({"batch_seconds": -1.0}, "batch_seconds must be greater than 0 (got -1.0)"),
        ({"latency_ms": -5}, "latency_ms must be greater than or equal to 0 (got -5)"),
        ({"job_seconds": "5"}, "job_seconds must be a valid number (got '5')"),
        ({"batch_max_requests": 0}, "batch_max_requests must be greater than or equal to 1"),
        ({"limits": {"*": {"rpm": -1}}}, "limits, model *: rpm must be greater than or equal to 1"),
    ],
)
def test_a_bad_setting_is_refused_naming_it(options: dict[str, object], words: str) -> None:
    with pytest.raises(SandboxError) as info:
        SandboxConfig.of(**options)
    assert words in str(info.value)


def test_run_sandbox_takes_a_config_or_its_fields_but_not_unknown_ones() -> None:
    config = SandboxConfig(limits=LimitTable.from_json({"*": {"rpm": 5}}, source="test"))
    with run_sandbox(config) as sb:
        assert sb.limits() == {"*": {"rpm": 5}}
    with pytest.raises(TypeError, match="unknown sandbox setting"), run_sandbox(job_secs=1):
        pass
    with pytest.raises(TypeError, match="not both"), run_sandbox(config, job_seconds=2):
        pass
