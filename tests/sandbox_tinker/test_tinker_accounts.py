"""Keys and ownership: a wrong key is refused as the SDK expects, each account sees its own
runs only, and sessions, runs and checkpoints survive a restart with a state directory."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
import tinker
from fixtures.tinker import BASE_MODEL, oai_base_url
from tinker import types

from labmgr.sandbox import (
    Account,
    AccountBook,
    SandboxConfig,
    SandboxError,
    SandboxHandle,
    run_sandbox,
    serve_sandbox,
)

ALPHA, BETA = "tml-alpha-key-0001", "tml-beta-key-0002"
ACCOUNTS = AccountBook(
    {ALPHA: Account("org-alpha", "alpha", "proj_a"), BETA: Account("org-beta", "beta", "proj_b")}
)


def _root(sandbox: SandboxHandle) -> str:
    return sandbox.base_url.removesuffix("/v1") + "/tinker"


def _save_sampler(service: tinker.ServiceClient, name: str) -> tuple[str, str]:
    """A short run's (model id, sampler checkpoint path)."""
    client = service.create_lora_training_client(BASE_MODEL, rank=8).result()
    tokens = [1, 2, 3, 4]
    datum = types.Datum(
        model_input=types.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0, 1.0, 1.0]},
    )
    client.forward_backward([datum], "cross_entropy").result()
    client.optim_step(types.AdamParams(learning_rate=1e-4)).result()
    return client.model_id, client.save_weights_for_sampler(name).result().path


@pytest.fixture(scope="module")
def two_accounts(tinker_sandbox: SandboxHandle) -> Iterator[SandboxHandle]:
    with run_sandbox(accounts=ACCOUNTS) as sandbox:
        yield sandbox


def test_unknown_key_is_refused_with_401(two_accounts: SandboxHandle) -> None:
    with pytest.raises(tinker.AuthenticationError, match=r"Invalid API key tml-\*\*\*9999"):
        rest = tinker.RestClient(base_url=_root(two_accounts), api_key="tml-not-listed-9999")
        rest.get_server_capabilities().result()
    service = tinker.ServiceClient(base_url=_root(two_accounts), api_key="tml-not-listed-9999")
    with pytest.raises(tinker.AuthenticationError):
        service.create_lora_training_client(BASE_MODEL, rank=8).result()


def test_a_key_that_is_not_a_tinker_key_is_refused_by_the_server(
    two_accounts: SandboxHandle,
) -> None:
    request = urllib.request.Request(
        _root(two_accounts) + "/api/v1/get_server_capabilities",
        headers={"X-API-Key": "sk-openai-style-key"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 401
    message = json.loads(refused.value.read())["error"]["message"]
    assert "tml-" in message and "sk-openai-style-key" not in message


def test_each_account_sees_its_own_runs_only(two_accounts: SandboxHandle) -> None:
    root = _root(two_accounts)
    model_id, path = _save_sampler(tinker.ServiceClient(base_url=root, api_key=ALPHA), "mine")
    assert tinker.RestClient(base_url=root, api_key=ALPHA).list_checkpoints(model_id).result()
    with pytest.raises(tinker.NotFoundError):
        tinker.RestClient(base_url=root, api_key=BETA).list_checkpoints(model_id).result()
    hello = [{"role": "user", "content": "hi"}]
    beta = openai.OpenAI(base_url=oai_base_url(two_accounts), api_key=BETA, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        beta.chat.completions.create(model=path, messages=hello)
    alpha = openai.OpenAI(base_url=oai_base_url(two_accounts), api_key=ALPHA, max_retries=0)
    state = path.replace("/sampler_weights/", "/weights/")
    with pytest.raises(openai.NotFoundError):  # no training checkpoint of that name
        alpha.chat.completions.create(model=state, messages=hello)
    wrong = openai.OpenAI(base_url=oai_base_url(two_accounts), api_key="tml-no", max_retries=0)
    with pytest.raises(openai.AuthenticationError):
        wrong.chat.completions.create(model=BASE_MODEL, messages=hello)


def test_runs_and_checkpoints_survive_a_restart(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with run_sandbox(state_dir=state) as sandbox:
        service = tinker.ServiceClient(base_url=_root(sandbox), api_key=ALPHA)
        model_id, path = _save_sampler(service, "kept")
    with run_sandbox(state_dir=state) as sandbox:
        rest = tinker.RestClient(base_url=_root(sandbox), api_key=ALPHA)
        listed = rest.list_checkpoints(model_id).result().checkpoints
        assert [c.tinker_path for c in listed] == [path]
        client = openai.OpenAI(base_url=oai_base_url(sandbox), api_key=ALPHA, max_retries=0)
        answer = client.chat.completions.create(
            model=path, messages=[{"role": "user", "content": "Say something kind."}]
        )
        assert answer.choices[0].message.content
        assert answer.model == path


def test_a_damaged_tinker_state_stops_the_start_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "blobs").mkdir()
    (tmp_path / "blobs" / "tinker.json").write_text("{not json")
    with pytest.raises(SandboxError, match=r"tinker\.json is damaged; move it away"):
        serve_sandbox(SandboxConfig(state_dir=tmp_path), port=0, on_listening=print)
