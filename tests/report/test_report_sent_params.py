"""The report's sample browser shows what each sample's model was sent (`api_kwargs`), as
text, whatever a request hook put in it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fixtures.report import judged_frame

from evals.report import write_report
from evals.report._payload import build_payload
from evals.runs import load_run, write_run

from .conftest import open_report, wait_until

HOSTILE = "</script><script>window.__pwned = 4</script>"


def _run_with_sent_params(folder: Path) -> Path:
    frame = judged_frame({"reasoning": ["gpt-5-mini"], "chat": ["gpt-4.1-mini"]}, samples=3)
    sent = {
        "gpt-5-mini": {"model": "gpt-5-mini", "max_completion_tokens": 900, "user": HOSTILE},
        "gpt-4.1-mini": {"model": "gpt-4.1-mini", "max_tokens": 900, "temperature": 0},
    }
    frame["api_kwargs"] = [json.dumps(sent[m], sort_keys=True) for m in frame["model"]]
    run = write_run(folder, {"wish": frame}, resamples=100)
    return write_report(run, figures=False)


def test_the_payload_holds_each_distinct_request_once(tmp_path: Path) -> None:
    _run_with_sent_params(tmp_path / "run")
    payload = build_payload(load_run(tmp_path / "run"))
    assert len(payload["sent"]) == 2
    rows = payload["rows"]
    models = [payload["models"][m] for m in rows["m"]]
    for model, k in zip(models, rows["k"], strict=True):
        assert json.loads(payload["sent"][k])["model"] == model


@pytest.mark.browser
def test_a_selected_sample_shows_its_request_parameters_as_text(
    browser: Any, tmp_path: Path
) -> None:
    opened = open_report(browser, _run_with_sent_params(tmp_path / "run"))
    page = opened.page
    try:
        before = page.evaluate("window.__report.filters")
        page.select_option("#f-model", label="gpt-5-mini")
        wait_until(page, f"window.__report.filters > {before}")
        page.locator("#sample-table tbody tr").first.click()
        detail = page.inner_text("#sample-detail")
        assert "sent (api_kwargs)" in detail
        assert '"max_completion_tokens": 900' in detail and HOSTILE in detail
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert opened.problems == []
    finally:
        page.close()
