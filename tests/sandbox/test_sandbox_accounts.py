"""Several accounts: keys map to org/project; objects are invisible across them."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest
from fixtures.sandbox import training_jsonl, wait_for_job
from openai import OpenAI

from labmgr.sandbox import AccountBook, AccountsFileError, SandboxHandle


@pytest.fixture
def multi(sandbox_multi_account: SandboxHandle) -> SandboxHandle:
    return sandbox_multi_account


def _client(sb: SandboxHandle, key: str) -> OpenAI:
    return OpenAI(
        base_url=sb.base_url, api_key=key, max_retries=0, _strict_response_validation=True
    )


def test_headers_tell_each_key_its_org_and_project(multi: SandboxHandle) -> None:
    for key, org, project in [
        ("sk-test-alpha", "alpha-lab", "proj_alpha"),
        ("sk-test-beta", "beta-lab", "proj_default"),
    ]:
        headers = _client(multi, key).models.with_raw_response.list().headers
        assert (headers["openai-organization"], headers["openai-project"]) == (org, project)


def test_unknown_key_is_401_without_echoing_the_key(multi: SandboxHandle) -> None:
    secret = "sk-test-not-listed-12"
    with pytest.raises(openai.AuthenticationError) as info:
        _client(multi, secret).models.list()
    assert info.value.code == "invalid_api_key"
    assert secret not in info.value.message


def test_files_jobs_and_models_are_invisible_to_other_projects(multi: SandboxHandle) -> None:
    alpha, beta, alpha_two = (
        _client(multi, k) for k in ("sk-test-alpha", "sk-test-beta", "sk-test-alpha-two")
    )
    file_id = alpha.files.create(file=("t.jsonl", training_jsonl()), purpose="fine-tune").id
    job = alpha.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id, suffix="iso")
    model = wait_for_job(alpha, job.id).fine_tuned_model
    assert model is not None and model.startswith("ft:gpt-4o-mini-2024-07-18:alpha-lab:iso:")
    assert job.organization_id == "org-alpha"
    for other in (beta, alpha_two):
        with pytest.raises(openai.NotFoundError):
            other.files.retrieve(file_id)
        with pytest.raises(openai.NotFoundError):
            other.fine_tuning.jobs.retrieve(job.id)
        with pytest.raises(openai.NotFoundError) as info:
            other.chat.completions.create(model=model, messages=[{"role": "user", "content": "x"}])
        assert info.value.code == "model_not_found"
        assert model not in {m.id for m in other.models.list()}
        assert job.id not in {j.id for j in other.fine_tuning.jobs.list()}
        with pytest.raises(openai.BadRequestError):
            other.fine_tuning.jobs.create(model="gpt-4o-mini", training_file=file_id)
    assert alpha.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "x"}]
    ).choices


def test_mismatched_organization_header_is_401(multi: SandboxHandle) -> None:
    client = OpenAI(
        base_url=multi.base_url, api_key="sk-test-alpha", organization="org-beta", max_retries=0
    )
    with pytest.raises(openai.AuthenticationError):
        client.models.list()


def test_json_accounts_file_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "accounts.json"
    path.write_text(
        json.dumps({"accounts": [{"key": "k1", "organization": "org-1", "slug": "one"}]})
    )
    book = AccountBook.from_file(path)
    assert book.authenticate("Bearer k1").slug == "one"


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("accounts: []", "non-empty list"),
        ("accounts:\n  - key: k\n    slug: s\n", "entry 1: organization is required"),
        ("accounts:\n  - {key: k, organization: o, slug: 'a:b'}\n", "may not contain ':'"),
        ("accounts: [", "not valid YAML"),
    ],
)
def test_bad_accounts_file_names_the_problem(tmp_path: Path, text: str, fragment: str) -> None:
    path = tmp_path / "accounts.yaml"
    path.write_text(text)
    with pytest.raises(AccountsFileError) as info:
        AccountBook.from_file(path)
    assert fragment in str(info.value) and str(path) in str(info.value)
