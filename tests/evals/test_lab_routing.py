"""Routing through the lab's keys: a fine-tuned model goes to a key of its owner."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evals import Cache, Question, RunSettings
from evals.lab import LabRouter
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
        owners: dict[str, Any] = {
            "ft:gpt-4o-mini:beta-lab:one:A1": (beta.organization, beta.project),
            "ft:gpt-4o-mini:beta-lab:two:B2": (beta.organization, beta.project),
        }
        router = LabRouter(accounts, owners)
        one = router.endpoint_for("ft:gpt-4o-mini:beta-lab:one:A1")
        two = router.endpoint_for("ft:gpt-4o-mini:beta-lab:two:B2")
        base = router.endpoint_for("gpt-4o-mini")
        assert one.key_name == "OPENAI_API_KEY_BETA" and one is two
        assert base.key_name == "OPENAI_API_KEY"
        assert "sk-test" not in repr(one)
        q = Question.create(type="free_form", name="lab", paraphrases=["Hi."], max_tokens=5)
        df = q.df(
            {"base": ["gpt-4o-mini"]},
            cache=Cache(tmp_path / "c"),
            router=router,
            settings=RunSettings(progress=False),
        )
        assert df["answer"].notna().all()
