"""Organization/project come from one GET /models per key, cached in the lab by fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.lab import IdentityServer

from jobs_db import FinetuneJob
from labmgr.accounts import Accounts, CachedIdentity, ClientPool, identity_cache
from labmgr.errors import CredentialCheckFailed
from labmgr.routing import LabRouter, NoEndpointError, candidate_credentials, resolved_credentials
from labmgr.settings import Settings

KEY_A = "sk-test-alpha-01234"
KEY_B = "sk-test-beta-01234"
KEY_C = "sk-test-gamma-01234"


@pytest.fixture
def two_projects(
    identity_server: IdentityServer, monkeypatch: pytest.MonkeyPatch, lab_settings: Settings
) -> IdentityServer:
    identity_server.identities[KEY_A] = ("org-one", "proj_a")
    identity_server.identities[KEY_B] = ("org-one", "proj_b")
    monkeypatch.setenv("OPENAI_BASE_URL", identity_server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    monkeypatch.setenv("OPENAI_API_KEY_B", KEY_B)
    return identity_server


def test_resolution_reads_organization_and_project_headers(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    accounts = Accounts(lab_settings)
    resolved = [accounts.resolve(c) for c in accounts.credentials]
    assert [(c.key_env, c.organization, c.project) for c in resolved] == [
        ("OPENAI_API_KEY", "org-one", "proj_a"),
        ("OPENAI_API_KEY_B", "org-one", "proj_b"),
    ]
    assert two_projects.requests == ["/v1/models", "/v1/models"]


def test_second_process_resolves_from_the_cache_with_zero_requests(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    first = Accounts(lab_settings)
    for credential in first.credentials:
        first.resolve(credential)
    made = len(two_projects.requests)

    again = Accounts(lab_settings)
    assert [c.project for c in again.credentials] == ["proj_a", "proj_b"]
    found, failed = resolved_credentials(again)
    assert [(c.key_env, c.project) for c in found][1] == ("OPENAI_API_KEY_B", "proj_b")
    assert not failed and len(two_projects.requests) == made


def test_cache_file_holds_fingerprints_and_names_but_never_a_key(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    accounts = Accounts(lab_settings)
    accounts.check_all()
    text = lab_settings.accounts_path.read_text()
    assert KEY_A not in text and KEY_B not in text
    assert "alpha" not in text and "beta" not in text
    data = json.loads(text)
    assert {entry["key_env"] for entry in data["keys"].values()} == {
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_B",
    }
    assert all(len(fingerprint) == 64 for fingerprint in data["keys"])


def test_refresh_asks_again(two_projects: IdentityServer, lab_settings: Settings) -> None:
    accounts = Accounts(lab_settings)
    accounts.check_all()
    two_projects.identities[KEY_A] = ("org-two", "proj_moved")
    statuses = accounts.check_all(refresh=True)
    assert statuses[0].credential.organization == "org-two"


def _job(project: str | None, key_env: str | None = None) -> FinetuneJob:
    return FinetuneJob(id="ftjob-1", status="succeeded", project_id=project, key_env=key_env)


def test_a_job_is_managed_with_a_key_of_its_project(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    found, _ = resolved_credentials(Accounts(lab_settings))
    assert candidate_credentials(_job("proj_b"), found)[0].key_env == "OPENAI_API_KEY_B"
    assert [c.key_env for c in candidate_credentials(_job(None), found)] == [
        "OPENAI_API_KEY",
        "OPENAI_API_KEY_B",
    ]
    assert candidate_credentials(_job(None, "OPENAI_API_KEY_B"), found)[0].key_env == (
        "OPENAI_API_KEY_B"
    )


def test_a_fine_tune_of_a_project_without_a_key_is_a_typed_error(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    model = "ft:gpt-4o-mini:elsewhere:x:1"
    router = LabRouter(Accounts(lab_settings), {model: _job("proj_elsewhere")})
    with pytest.raises(NoEndpointError, match="proj_elsewhere") as caught:
        router.endpoint_for(model)
    assert "labmgr keys" in (caught.value.hint or "")


def test_rejected_key_names_the_variable_but_never_the_key(
    two_projects: IdentityServer, lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY_BAD", KEY_C)
    accounts = Accounts(lab_settings)
    bad = accounts.credential("OPENAI_API_KEY_BAD")
    with pytest.raises(CredentialCheckFailed) as caught:
        accounts.resolve(bad)
    assert "OPENAI_API_KEY_BAD" in caught.value.message and "401" in caught.value.message
    assert KEY_C not in str(caught.value) and "gamma" not in str(caught.value)
    # a key that cannot be checked is skipped when routing, not fatal
    found, failed = resolved_credentials(accounts)
    assert [c.key_env for c in found] == ["OPENAI_API_KEY", "OPENAI_API_KEY_B"]
    assert "401" in failed["OPENAI_API_KEY_BAD"]


def test_unreachable_endpoint_fails_with_a_clear_message(
    lab_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY_A)
    lab_settings.config_path.write_text("[api]\nmax_retries = 0\ntimeout = 5\n")
    from labmgr.settings import load_settings

    accounts = Accounts(load_settings())
    with pytest.raises(CredentialCheckFailed, match="could not connect"):
        accounts.resolve(accounts.default())


def test_pool_shares_one_client_per_endpoint_and_key(
    two_projects: IdentityServer, lab_settings: Settings
) -> None:
    accounts = Accounts(lab_settings)
    first, second = accounts.credentials
    pool = ClientPool(lab_settings)
    assert pool.client(first) is pool.client(first.with_identity("org-one", "proj_a"))
    assert pool.client(first) is not pool.client(second)
    assert pool.client(first).max_retries == lab_settings.api.max_retries
    assert pool.client(first).timeout == lab_settings.api.timeout
    assert len(pool) == 2
    pool.close()


def test_a_lab_folder_that_cannot_be_written_only_skips_the_cache(tmp_path: Path) -> None:
    """`labmgr keys` in a read-only lab still answers: the identity is returned, not kept."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    candidates = [folder, Path("/sys/kernel"), Path("/sys")]
    unwritable = next(c for c in candidates if not _can_create_in(c))
    cache = identity_cache(unwritable / "accounts.json")
    identity = CachedIdentity(
        endpoint="openai",
        base_url="http://127.0.0.1:9/v1",
        key_env="OPENAI_API_KEY",
        organization="org-one",
        project="proj_a",
    )
    entry = cache.put("f" * 64, identity)
    assert (entry.organization, entry.project) == ("org-one", "proj_a")
    assert cache.get("f" * 64) is None


def _can_create_in(folder: Path) -> bool:
    try:
        (folder / "probe").touch()
    except OSError:
        return False
    (folder / "probe").unlink()
    return True
