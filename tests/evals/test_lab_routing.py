"""Routing through the lab's keys: a fine-tuned model goes to a key of its owner, and the
runner sends every model on one key through one client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals import Cache, LabRouter, Question, RunSettings
from evals.runner import run_blocking
from evals.runner._transport import ClientLease
from jobs_db import FinetuneJob
from labmgr.accounts import Accounts
from labmgr.sandbox import run_sandbox
from labmgr.settings import Settings

ACCOUNTS = """\
accounts:
  - key: sk-test-alpha-0000
    organization: org-alpha
    slug: alpha-lab
  - key: sk-test-beta-0000
    organization: org-beta
    slug: beta-lab
"""


def test_fine_tuned_models_use_a_key_of_their_owner_and_share_its_client(
    lab_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounts_file = tmp_path / "accounts.yaml"
    accounts_file.write_text(ACCOUNTS)
    with run_sandbox(accounts=accounts_file) as sandbox:
        monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha-0000")
        monkeypatch.setenv("OPENAI_API_KEY_BETA", "sk-test-beta-0000")
        accounts = Accounts(lab_settings)
        beta = accounts.resolve(accounts.credential("OPENAI_API_KEY_BETA"))
        # As the job manager records them: the API's org id (not the header's slug), the
        # project and the name of the key that created the job.
        job = FinetuneJob(
            id="ftjob-beta",
            status="succeeded",
            organization_id="org-beta",
            project_id=beta.project,
            key_env="OPENAI_API_KEY_BETA",
            endpoint=sandbox.base_url,
        )
        owners: dict[str, Any] = {
            "ft:gpt-4o-mini:beta-lab:one:A1": job,
            "ft:gpt-4o-mini:beta-lab:two:B2": job,
        }
        router = LabRouter(accounts, owners)
        one = router.endpoint_for("ft:gpt-4o-mini:beta-lab:one:A1")
        two = router.endpoint_for("ft:gpt-4o-mini:beta-lab:two:B2")
        base = router.endpoint_for("gpt-4o-mini")
        assert one.key_name == "OPENAI_API_KEY_BETA" and one is two
        assert base.key_name == "OPENAI_API_KEY"
        assert "sk-test" not in repr(one)

        async def clients() -> tuple[bool, bool, int]:
            lease = ClientLease(RunSettings(progress=False))
            try:
                shared = lease.client(one) is lease.client(two)
                apart = lease.client(one) is not lease.client(base)
                raw = await lease.client(one).models.with_raw_response.list()
            finally:
                await lease.release()
            return shared, apart, raw.http_response.status_code

        # The runner's pool: one client per endpoint and key, never one per model.
        assert run_blocking(clients) == (True, True, 200)
        q = Question.create(type="free_form", name="lab", paraphrases=["Hi."], max_tokens=5)
        df = q.df(
            {"base": ["gpt-4o-mini"]},
            cache=Cache(tmp_path / "c"),
            router=router,
            settings=RunSettings(progress=False),
        )
        assert df["answer"].notna().all()


def test_a_job_whose_creating_key_is_gone_uses_another_key_of_its_project(
    lab_settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    accounts_file = tmp_path / "accounts.yaml"
    accounts_file.write_text(
        ACCOUNTS.replace("slug: alpha-lab", "slug: alpha-lab\n    project: proj_alpha").replace(
            "slug: beta-lab", "slug: beta-lab\n    project: proj_beta"
        )
    )
    with run_sandbox(accounts=accounts_file) as sandbox:
        monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha-0000")
        monkeypatch.setenv("OPENAI_API_KEY_RENAMED", "sk-test-beta-0000")
        accounts = Accounts(lab_settings)
        beta = accounts.resolve(accounts.credential("OPENAI_API_KEY_RENAMED"))
        job = FinetuneJob(
            id="ftjob-old",
            status="succeeded",
            organization_id="org-beta",
            project_id=beta.project,
            key_env="OPENAI_API_KEY_BETA",
            endpoint=sandbox.base_url,
        )
        alpha = accounts.resolve(accounts.default())
        assert alpha.project != beta.project, "the two sandbox accounts must differ"
        router = LabRouter(accounts, {"ft:gpt-4o-mini:beta-lab:old:C3": job})
        assert router.endpoint_for("ft:gpt-4o-mini:beta-lab:old:C3").key_name == (
            "OPENAI_API_KEY_RENAMED"
        )
