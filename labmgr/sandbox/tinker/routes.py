"""The handlers of Tinker's `/api/v1` routes and of its OpenAI-compatible endpoint. Every call
the SDK treats as a future is run when it arrives (the SDK sends a training client's calls one
at a time), so its result is ready for the first `retrieve_future`."""

from __future__ import annotations

import math
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.chat import create, create_legacy
from labmgr.sandbox.errors import APIError, bad_request
from labmgr.sandbox.protocol import Request, Response, StreamResponse

from . import wire
from .tokenizer import END_OF_TURN, encode, parse_chat
from .training import BASE_MODELS, progress_of_step, target_logprobs, trained_texts

if TYPE_CHECKING:
    from .service import TinkerService


PROTO = "application/x-protobuf"
_ROLES = ("system", "user", "assistant")
DEFAULT_MAX_TOKENS = 256
Handler = Callable[["TinkerService", Request], Awaitable[Response | StreamResponse]]


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _text(body: dict[str, Any], key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise bad_request(f"Missing or invalid '{key}': expected a non-empty string.", param=key)
    return value


def _number(body: dict[str, Any], key: str, default: int = 0) -> int:
    value = body.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise bad_request(f"Invalid '{key}': expected a non-negative integer.", param=key)
    return value


def _future(svc: TinkerService, result: bytes | dict[str, Any], **extra: Any) -> Response:
    content_type = PROTO if isinstance(result, bytes) else "json"
    return Response({"request_id": svc.finish(result, content_type)} | extra)


def _base_model(body: dict[str, Any]) -> str:
    base = _text(body, "base_model")
    if base not in BASE_MODELS:
        known = ", ".join(BASE_MODELS)
        raise bad_request(f"Unknown base model {base!r}; the sandbox serves {known}.")
    return base


def _reply(body: dict[str, Any]) -> Handler:
    async def handler(svc: TinkerService, req: Request) -> Response:
        return Response(body)

    return handler


_CLIENT_CONFIG = dict.fromkeys(  # plain JSON and httpx: no JWT, compression, pyqwest, futures
    """pjwt_auth_enabled use_pyqwest_transport proto_compress_fwdbwd
    sample_use_retrieve_futures sample_join_sampling_session""".split(),  # noqa: SIM905
    False,
)
_CAPABILITIES_BODY = {
    "supported_models": [
        {"model_name": n, "max_context_length": length, "trainable": True, "sampleable": True}
        for n, length in BASE_MODELS.items()
    ]
}


async def create_session(svc: TinkerService, req: Request) -> Response:
    session_id = str(uuid.uuid4())
    session = {"id": session_id, "scope": req.account.scope, "finished": None}
    svc.sessions[session_id] = session | {"created": svc.sb.now()}
    svc.save()
    return Response({"type": "create_session", "session_id": session_id})


async def heartbeat(svc: TinkerService, req: Request) -> Response:
    session = svc.session(req, req.json().get("session_id"), active=False)
    if session["finished"]:
        raise APIError(410, f"Session {session['id']} is finished.")
    return Response({"type": "session_heartbeat"})


async def finish_session(svc: TinkerService, req: Request) -> Response:
    session = svc.session(req, req.params[0], active=False)
    reason = req.json().get("reason")
    if not session["finished"]:  # the first reason wins
        kind = reason.get("type") if isinstance(reason, dict) else None
        session["finished"] = kind if isinstance(kind, str) else "success"
        svc.save()
    return Response({})


async def create_model(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    session = svc.session(req, body.get("session_id"))
    base = _base_model(body)
    lora = body.get("lora_config")
    lora = lora if isinstance(lora, dict) else {}
    seed = lora.get("seed")
    run = svc.new_run(session, _number(body, "model_seq_id"), base)
    run["lora_rank"] = int(lora.get("rank") or 32)
    run["seed"] = seed if isinstance(seed, int) else 0
    svc.save()
    return _future(svc, {"type": "create_model", "model_id": run["id"]}, model_id=run["id"])


async def get_info(svc: TinkerService, req: Request) -> Response:
    run = svc.run(req, req.json().get("model_id"))
    base = run["base_model"]
    data = {"arch": "lora", "model_name": base, "tokenizer_id": str(svc.tokenizer_folder)}
    info = {"type": "get_info", "model_id": run["id"], "model_data": data, "is_lora": True}
    return Response(info | {"lora_rank": run["lora_rank"], "model_name": base})


async def forward_backward(svc: TinkerService, req: Request) -> Response:
    try:
        request = wire.decode_forward_backward(req.body)
    except (wire.WireError, UnicodeDecodeError) as exc:
        raise bad_request(
            f"The forward_backward body is not a ForwardBackwardRequest: {exc}."
        ) from None
    if request.loss_fn != "cross_entropy":
        raise bad_request(
            f"The sandbox trains with loss_fn 'cross_entropy' only, not {request.loss_fn!r}."
        )
    run = svc.run(req, request.model_id)
    rows: list[list[float]] = []
    loss = 0.0
    for index, datum in enumerate(request.data):
        targets = [int(t) for t in datum.inputs.get("target_tokens", ())]
        weights = datum.inputs.get("weights", (1.0,) * len(targets))
        if len(targets) != len(datum.tokens) or len(weights) != len(targets):
            raise bad_request(
                f"Datum {index}: model_input has {len(datum.tokens)} tokens, target_tokens "
                f"{len(targets)} and weights {len(weights)}; the three must be equally long."
            )
        row = target_logprobs(run["seed"], run["progress"], targets)
        loss -= sum(lp * w for lp, w in zip(row, weights, strict=True))
        rows.append(row)
        if not request.forward_only:
            svc.pending.setdefault(run["id"], []).extend(trained_texts(targets, weights))
    run["last_request"] = svc.sb.now()
    output = wire.encode_forward_backward_output(rows, {"loss:sum": loss})
    return _future(svc, output, model_id=run["id"])


async def optim_step(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    run = svc.run(req, body.get("model_id"))
    params = body.get("adam_params") or body.get("optimizer_params") or {}
    rate = params.get("learning_rate", 1e-4) if isinstance(params, dict) else 1e-4
    if not isinstance(rate, int | float) or isinstance(rate, bool):
        raise bad_request("Invalid 'learning_rate': expected a number.", param="learning_rate")
    run["steps"] += 1
    run["progress"] += progress_of_step(float(rate))
    for text in svc.pending.pop(run["id"], []):
        run["trained"][text] = run["trained"].get(text, 0) + 1
    run["last_request"] = svc.sb.now()
    metrics = {"step": float(run["steps"]), "learning_rate": float(rate)}
    return _future(svc, {"type": "optim_step", "metrics": metrics}, model_id=run["id"])


async def save_weights(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    run = svc.run(req, body.get("model_id"))
    path = svc.save_checkpoint(run, "weights", _text(body, "path"), bool(body.get("overwrite")))
    return _future(svc, {"type": "save_weights", "path": path}, model_id=run["id"])


async def save_weights_for_sampler(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    run = svc.run(req, body.get("model_id"))
    result: dict[str, Any] = {"type": "save_weights_for_sampler"}
    if body.get("path"):
        overwrite = bool(body.get("overwrite"))
        result["path"] = svc.save_checkpoint(run, "sampler_weights", body["path"], overwrite)
    else:
        session = svc.sessions[run["session"]]
        seq = _number(body, "sampling_session_seq_id")
        sampler = svc.new_sampler(session, seq, run["base_model"], None, dict(run["trained"]))
        result["sampling_session_id"] = sampler["id"]
    svc.save()
    return _future(svc, result, model_id=run["id"])


async def load_weights(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    checkpoint = svc.checkpoint(req, _text(body, "path"), "weights")
    if body.get("session_id") is not None:
        session = svc.session(req, body["session_id"])
        run = svc.new_run(session, _number(body, "model_seq_id"), checkpoint["base_model"])
    else:
        run = svc.run(req, body.get("model_id"))
    for key in ("lora_rank", "seed", "steps", "progress"):
        run[key] = checkpoint[key]
    run["trained"] = dict(checkpoint["trained"])
    svc.pending.pop(run["id"], None)
    svc.save()
    result = {"type": "load_weights", "path": checkpoint["tinker_path"], "model_id": run["id"]}
    return _future(svc, result, model_id=run["id"])


def _checkpoint_view(checkpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        "checkpoint_id": checkpoint["checkpoint_id"],
        "checkpoint_type": "training" if checkpoint["kind"] == "weights" else "sampler",
        "time": iso(checkpoint["time"]),
        "tinker_path": checkpoint["tinker_path"],
        "size_bytes": 1024 * checkpoint["lora_rank"],
        "public": False,
        "user_metadata": None,
        "expires_at": None,
    }


def _run_view(svc: TinkerService, req: Request, run: dict[str, Any]) -> dict[str, Any]:
    saved = [c for c in svc.checkpoints.values() if c["run"] == run["id"]]
    last = {c["kind"]: _checkpoint_view(c) for c in saved}  # the newest of each kind
    return {
        "training_run_id": run["id"],
        "base_model": run["base_model"],
        "model_owner": req.account.organization,
        "is_lora": True,
        "corrupted": False,
        "lora_rank": run["lora_rank"],
        "last_request_time": iso(run["last_request"]),
        "last_checkpoint": last.get("weights"),
        "last_sampler_checkpoint": last.get("sampler_weights"),
        "user_metadata": None,
    }


async def get_training_run(svc: TinkerService, req: Request) -> Response:
    return Response(_run_view(svc, req, svc.run(req, req.params[0])))


async def list_checkpoints(svc: TinkerService, req: Request) -> Response:
    run = svc.run(req, req.params[0])
    saved = [_checkpoint_view(c) for c in svc.checkpoints.values() if c["run"] == run["id"]]
    return Response({"checkpoints": saved, "cursor": None})


async def delete_checkpoint(svc: TinkerService, req: Request) -> Response:
    run = svc.run(req, req.params[0])
    path = f"tinker://{run['id']}/{req.params[1]}"
    if path not in svc.checkpoints:
        raise APIError(404, f"Checkpoint {path} not found.")
    del svc.checkpoints[path]
    svc.save()
    return Response({})


async def list_training_runs(svc: TinkerService, req: Request) -> Response:
    runs = [r for r in svc.runs.values() if r["scope"] == req.account.scope]
    offset, limit = req.int_query("offset", 0), req.int_query("limit", 20)
    page = [_run_view(svc, req, run) for run in runs[offset : offset + limit]]
    cursor = {"offset": offset, "limit": limit, "total_count": len(runs)}
    return Response({"training_runs": page, "cursor": cursor})


async def weights_info(svc: TinkerService, req: Request) -> Response:
    checkpoint = svc.checkpoint(req, _text(req.json(), "tinker_path"))
    info = {"base_model": checkpoint["base_model"], "is_lora": True}
    return Response(info | {"lora_rank": checkpoint["lora_rank"]})


async def create_sampling_session(svc: TinkerService, req: Request) -> Response:
    body = req.json()
    session = svc.session(req, body.get("session_id"))
    seq = _number(body, "sampling_session_seq_id")
    if body.get("model_path"):
        checkpoint = svc.checkpoint(req, body["model_path"], "sampler_weights")
        path = checkpoint["tinker_path"]
        sampler = svc.new_sampler(session, seq, checkpoint["base_model"], path, None)
    else:
        sampler = svc.new_sampler(session, seq, _base_model(body), None, None)
    svc.save()
    return Response({"type": "create_sampling_session", "sampling_session_id": sampler["id"]})


async def get_sampler(svc: TinkerService, req: Request) -> Response:
    sampler = svc.sampler(req, req.params[0])
    keys = ("base_model", "model_path")
    return Response({"sampler_id": sampler["id"]} | {k: sampler[k] for k in keys})


async def sample(svc: TinkerService, req: Request) -> Response:
    """`asample`: the prompt's tokens become a chat request for the simulator's model (a base
    model, checkpoint path or sampler id), its answers sampled token sequences."""
    body = req.json()
    sampler = svc.sampler(req, body.get("sampling_session_id"))
    served = sampler["model_path"] or (
        sampler["id"] if sampler["trained"] is not None else sampler["base_model"]
    )
    chunks = body["prompt"].get("chunks") if isinstance(body.get("prompt"), dict) else None
    if not isinstance(chunks, list):
        raise bad_request("Invalid 'prompt': expected an object with a list of chunks.")
    prompt: list[int] = []
    for chunk in chunks:
        if not isinstance(chunk, dict) or chunk.get("type") != "encoded_text":
            raise bad_request("The sandbox samples from encoded_text prompt chunks only.")
        prompt += [int(t) for t in chunk.get("tokens") or ()]
    params = body.get("sampling_params")
    params = params if isinstance(params, dict) else {}
    max_tokens = params.get("max_tokens") or DEFAULT_MAX_TOKENS
    count = body.get("num_samples", 1)
    if not isinstance(count, int) or not 1 <= count <= 128:
        raise bad_request("Invalid 'num_samples': expected an integer from 1 to 128.")
    chat: dict[str, Any] = {
        "messages": [
            {"role": role if role in _ROLES else "user", "content": text}
            for role, text in parse_chat(prompt)
        ],
        "n": count,
        "max_tokens": max_tokens,
        "temperature": min(2.0, max(0.0, float(params.get("temperature", 1.0)))),
    }
    if isinstance(params.get("seed"), int):
        chat["seed"] = params["seed"]
    stop = params.get("stop")
    stops = [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []
    if all(isinstance(s, str) for s in stops) and stops:
        chat["stop"] = stops[:4]
    completion = svc.sb.simulator.complete(served, chat)
    sequences = []
    for choice in completion.choices:
        tokens = encode(choice["message"]["content"] or "")
        by_length = len(tokens) >= max_tokens or choice["finish_reason"] == "length"
        tokens = tokens[:max_tokens]
        if not by_length:
            tokens.append(END_OF_TURN)
        sequences.append((by_length, tokens, target_logprobs(0, 3.0, tokens)))
    prompt_logprobs = None
    if body.get("prompt_logprobs"):
        prompt_logprobs = [math.nan, *target_logprobs(0, 0.0, prompt)[1:]]
    result = wire.encode_sample_response(sequences, prompt_logprobs)
    rid = svc.finish(result, PROTO)
    sequence_ids = [f"{rid}:{i}" for i in range(len(sequences))]
    return Response({"request_id": rid, "sample_sequence_ids": sequence_ids})


async def retrieve_future(svc: TinkerService, req: Request) -> Response:
    rid = req.json().get("request_id")
    found = svc.futures.get(rid) if isinstance(rid, str) else None
    if found is None:
        raise APIError(404, f"No request {rid!r}: it is unknown or expired.")
    result, content_type = found
    return Response(result, content_type=PROTO) if content_type == PROTO else Response(result)


def _oai(handler: Callable[..., Awaitable[Response | StreamResponse]]) -> Handler:
    """Serve one of the sandbox's OpenAI handlers with Tinker's models."""
    return lambda svc, req: handler(svc.sb, req, svc.served_model)


_RUNS = "/api/v1/training_runs"
ROUTES: list[tuple[str, str, str, Handler]] = [
    ("POST", "/api/v1/client/config", "client_config", _reply(_CLIENT_CONFIG)),
    ("POST", "/api/v1/client/dynamic_config", "dynamic_config", _reply({})),
    ("GET", "/api/v1/healthz", "healthz", _reply({"status": "ok"})),
    ("GET", "/api/v1/get_server_capabilities", "capabilities", _reply(_CAPABILITIES_BODY)),
    ("POST", "/api/v1/create_session", "create_session", create_session),
    ("POST", "/api/v1/session_heartbeat", "session_heartbeat", heartbeat),
    ("POST", "/api/v1/sessions/{id}/finish", "finish_session", finish_session),
    ("POST", "/api/v1/telemetry", "telemetry", _reply({"status": "accepted"})),
    ("POST", "/api/v1/create_model", "create_model", create_model),
    ("POST", "/api/v1/get_info", "get_info", get_info),
    ("POST", "/api/v1/forward_backward", "forward_backward", forward_backward),
    ("POST", "/api/v1/optim_step", "optim_step", optim_step),
    ("POST", "/api/v1/save_weights", "save_weights", save_weights),
    (
        "POST",
        "/api/v1/save_weights_for_sampler",
        "save_weights_for_sampler",
        save_weights_for_sampler,
    ),
    ("POST", "/api/v1/load_weights", "load_weights", load_weights),
    ("POST", "/api/v1/retrieve_future", "retrieve_future", retrieve_future),
    ("POST", "/api/v1/create_sampling_session", "create_sampling_session", create_sampling_session),
    ("GET", "/api/v1/samplers/{id}", "get_sampler", get_sampler),
    ("POST", "/api/v1/asample", "sample", sample),
    ("GET", _RUNS, "training_runs.list", list_training_runs),
    ("GET", _RUNS + "/{id}", "training_runs.retrieve", get_training_run),
    ("GET", _RUNS + "/{id}/checkpoints", "checkpoints.list", list_checkpoints),
    ("DELETE", _RUNS + "/{id}/checkpoints/{path}", "checkpoints.delete", delete_checkpoint),
    ("POST", "/api/v1/weights_info", "weights_info", weights_info),
    ("POST", "/oai/api/v1/chat/completions", "oai.chat.completions", _oai(create)),
    ("POST", "/oai/api/v1/completions", "oai.completions", _oai(create_legacy)),
]
"""(method, path under the Tinker root, stats name, handler); `{path}` may hold '/'."""
