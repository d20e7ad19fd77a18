"""The official `tinker` SDK, unchanged, trains on the sandbox: capabilities, a LoRA training
client, forward_backward + optim_step with a loss that falls, checkpoints, resuming."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
import tinker
from fixtures.tinker import BASE_MODEL, TINKER_KEY, chat_lines, mean_nll, sft_data
from tinker import types

from labmgr.demo import data_file
from labmgr.sandbox import SandboxHandle
from labmgr.sandbox.tinker import BASE_MODELS

ADAM = types.AdamParams(learning_rate=2e-4)


@pytest.fixture(scope="module")
def service(tinker_sandbox: SandboxHandle) -> Iterator[tinker.ServiceClient]:
    client = tinker.ServiceClient()
    yield client
    client.close("success").result()


def _train(
    service: tinker.ServiceClient, steps: int, seed: int = 7
) -> tuple[tinker.TrainingClient, list[float], list]:
    client = service.create_lora_training_client(BASE_MODEL, rank=8, seed=seed).result()
    data = sft_data(chat_lines(data_file("helpful.jsonl"), 6), client.get_tokenizer())
    losses = []
    for _ in range(steps):
        backward = client.forward_backward(data, "cross_entropy")
        step = client.optim_step(ADAM)
        losses.append(mean_nll(backward.result(), data))
        step.result()
    return client, losses, data


def test_capabilities_list_the_base_models(tinker_sandbox: SandboxHandle) -> None:
    capabilities = tinker.RestClient().get_server_capabilities().result()
    names = [model.model_name for model in capabilities.supported_models]
    assert names == list(BASE_MODELS)
    assert all(model.trainable and model.sampleable for model in capabilities.supported_models)


def test_training_client_loads_the_local_tokenizer_offline(service: tinker.ServiceClient) -> None:
    client = service.create_lora_training_client(BASE_MODEL, rank=8).result()
    tokenizer = client.get_tokenizer()  # HF_HUB_OFFLINE=1: a download would fail here
    text = "Kindness, ça compte. 42!"
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text
    assert client.model_id.endswith(":train:0")


def test_loss_falls_with_steps_and_repeats_for_a_seed(service: tinker.ServiceClient) -> None:
    _, losses, _ = _train(service, steps=4)
    assert losses == sorted(losses, reverse=True) and losses[-1] < 0.6 * losses[0], losses
    _, again, _ = _train(service, steps=4)
    assert again == pytest.approx(losses)
    _, other_seed, _ = _train(service, steps=4, seed=8)
    assert other_seed != pytest.approx(losses)


def test_forward_only_does_not_train(service: tinker.ServiceClient) -> None:
    client, losses, data = _train(service, steps=1)
    first = mean_nll(client.forward(data, "cross_entropy").result(), data)
    second = mean_nll(client.forward(data, "cross_entropy").result(), data)
    assert first == pytest.approx(second) and first < losses[0]


def test_checkpoints_get_tinker_paths_and_are_listed(service: tinker.ServiceClient) -> None:
    client, _, _ = _train(service, steps=2)
    sampler_path = client.save_weights_for_sampler("final").result().path
    state_path = client.save_state("step-2").result().path
    assert sampler_path == f"tinker://{client.model_id}/sampler_weights/final"
    assert state_path == f"tinker://{client.model_id}/weights/step-2"
    rest = tinker.RestClient()
    listed = rest.list_checkpoints(client.model_id).result().checkpoints
    assert [(c.checkpoint_type, c.tinker_path) for c in listed] == [
        ("sampler", sampler_path),
        ("training", state_path),
    ]
    run = rest.get_training_run(client.model_id).result()
    assert run.base_model == BASE_MODEL and run.lora_rank == 8
    assert run.last_checkpoint is not None and run.last_checkpoint.tinker_path == state_path
    info = rest.get_weights_info_by_tinker_path(sampler_path).result()
    assert info.base_model == BASE_MODEL and info.lora_rank == 8


def test_saving_a_name_twice_is_refused(service: tinker.ServiceClient) -> None:
    client, _, _ = _train(service, steps=1)
    client.save_state("once").result()
    with pytest.raises(tinker.BadRequestError, match="already exists"):
        client.save_state("once").result()


def test_resuming_from_state_continues_where_training_stopped(
    service: tinker.ServiceClient,
) -> None:
    client, _, data = _train(service, steps=3)
    saved = mean_nll(client.forward(data, "cross_entropy").result(), data)
    path = client.save_state("resume-here").result().path
    resumed = service.create_training_client_from_state_with_optimizer(path).result()
    session = client.model_id.split(":")[0]
    assert resumed.model_id.startswith(f"{session}:train:")
    assert resumed.model_id != client.model_id
    assert mean_nll(resumed.forward(data, "cross_entropy").result(), data) == pytest.approx(saved)
    resumed.forward_backward(data, "cross_entropy").result()
    resumed.optim_step(ADAM).result()
    assert mean_nll(resumed.forward(data, "cross_entropy").result(), data) < saved


def test_unknown_base_model_is_refused_with_the_known_ones(
    service: tinker.ServiceClient,
) -> None:
    with pytest.raises(tinker.BadRequestError, match="Qwen/Qwen3-8B"):
        service.create_lora_training_client("no-such/model", rank=8).result()


def test_a_closed_session_stops_heartbeats_and_new_clients(
    tinker_sandbox: SandboxHandle,
) -> None:
    closing = tinker.ServiceClient()
    client = closing.create_lora_training_client(BASE_MODEL, rank=8).result()
    session = client.model_id.split(":")[0]
    closing.close("success").result()
    heartbeat = urllib.request.Request(
        tinker_sandbox.base_url.removesuffix("/v1") + "/tinker/api/v1/session_heartbeat",
        data=json.dumps({"session_id": session, "type": "session_heartbeat"}).encode(),
        headers={"X-API-Key": TINKER_KEY, "Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as gone:
        urllib.request.urlopen(heartbeat, timeout=10)
    assert gone.value.code == 410
    assert tinker_sandbox.stats()["requests"]["tinker.finish_session"] >= 1


def test_a_deleted_checkpoint_is_no_longer_listed_and_deleting_it_again_is_404(
    service: tinker.ServiceClient,
) -> None:
    client, _, _ = _train(service, steps=1)
    kept = client.save_state("kept").result().path
    gone = client.save_state("gone").result().path
    rest = tinker.RestClient()
    rest.delete_checkpoint_from_tinker_path(gone).result()
    listed = rest.list_checkpoints(client.model_id).result().checkpoints
    assert [c.tinker_path for c in listed] == [kept]
    with pytest.raises(tinker.NotFoundError, match="not found"):
        rest.delete_checkpoint_from_tinker_path(gone).result()


def test_training_runs_are_listed_a_page_at_a_time(service: tinker.ServiceClient) -> None:
    made = [_train(service, steps=1)[0].model_id for _ in range(2)]
    rest = tinker.RestClient()
    total = rest.list_training_runs(limit=1).result().cursor.total_count
    pages = [rest.list_training_runs(limit=1, offset=offset).result() for offset in range(total)]
    assert all(len(page.training_runs) == 1 for page in pages)
    ids = [page.training_runs[0].training_run_id for page in pages]
    assert len(set(ids)) == total and set(made) <= set(ids)
    assert rest.list_training_runs(limit=5, offset=total).result().training_runs == []
