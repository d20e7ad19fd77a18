"""The sandbox's Tinker: authentication, routing and the records behind the handlers."""

from __future__ import annotations

import json
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.behaviour import ModelCard
from labmgr.sandbox.errors import APIError, bad_request, model_not_found
from labmgr.sandbox.protocol import Request, Response, RouteTable, StreamResponse, error_response
from labmgr.sandbox.store import request_id

from .routes import ROUTES
from .tokenizer import default_tokenizer_folder, write_tokenizer
from .training import BASE_MODELS, base_card, persona_of

if TYPE_CHECKING:
    from labmgr.sandbox.core import Sandbox


_ROUTES = RouteTable(ROUTES, "{path}")
BLOB = "tinker.json"
_SAVED = ("sessions", "runs", "checkpoints", "samplers")
FUTURES_KEPT = 10_000
Future = tuple[bytes | dict[str, Any], str]
"""A finished future's result: a JSON object or protobuf bytes, and its content type."""


class TinkerService:
    """Tinker's API at `<sandbox root>/tinker`, and its OpenAI-compatible endpoint at
    `/tinker/oai/api/v1`; models answer through the sandbox's simulator. Sessions, training
    runs, checkpoints and sampling sessions are JSON-ready dicts, kept across restarts in the
    store's `tinker.json` blob; futures' results live in memory only."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sb = sandbox
        state_dir = sandbox.config.state_dir
        folder = state_dir / "tinker-tokenizer" if state_dir else default_tokenizer_folder()
        self.tokenizer_folder = write_tokenizer(folder)
        """The absolute folder every base model names as its `tokenizer_id`."""
        store = sandbox.store
        self.sessions: dict[str, dict[str, Any]] = {}
        self.runs: dict[str, dict[str, Any]] = {}
        """Training runs (LoRA models) by model id ``{session}:train:{n}``."""
        self.checkpoints: dict[str, dict[str, Any]] = {}
        """Saved weights by `tinker://` path."""
        self.samplers: dict[str, dict[str, Any]] = {}
        self.pending: dict[str, list[str]] = {}
        """Per run, the texts of forward_backward passes the next optim_step applies."""
        self.futures: OrderedDict[str, Future] = OrderedDict()
        saved = store.blob(BLOB)
        if saved:
            try:
                data = json.loads(saved)
                for name in _SAVED:
                    setattr(self, name, dict(data[name]))
            except (ValueError, KeyError, TypeError):
                raise ValueError(
                    f"sandbox state file {store.state_dir}/blobs/{BLOB} is damaged; move it "
                    "away to start without Tinker sessions and checkpoints"
                ) from None
        for name in BASE_MODELS:
            sandbox.simulator.register_base(base_card(name))
        for checkpoint in self.checkpoints.values():
            if checkpoint["kind"] == "sampler_weights":
                self._serve(checkpoint["tinker_path"], checkpoint["base_model"], checkpoint)
        for sampler in self.samplers.values():
            if sampler["trained"] is not None:
                self._serve(sampler["id"], sampler["base_model"], sampler)

    def save(self) -> None:
        """Write the records to the state directory (if there is one)."""
        if self.sb.store.state_dir is not None:
            records = {name: getattr(self, name) for name in _SAVED}
            self.sb.store.put_blob(BLOB, json.dumps(records).encode())

    def finish(self, result: bytes | dict[str, Any], content_type: str = "json") -> str:
        """Keep a finished future's result; returns its request id."""
        rid = request_id("tinker-req-")
        self.futures[rid] = (result, content_type)
        if len(self.futures) > FUTURES_KEPT:
            self.futures.popitem(last=False)
        return rid

    async def handle(
        self, method: str, path: str, query: dict[str, str], headers: dict[str, str], body: bytes
    ) -> Response | StreamResponse:
        """Answer one request whose path is `path` below `/tinker`."""
        stats = self.sb.stats
        route = _ROUTES.match(method, path)
        stats.enter(f"tinker.{route[0]}" if route else "tinker.unknown")
        response: Response | StreamResponse
        try:
            account = self._authenticate(headers, oai=path.startswith("/oai/"))
            if route is None:
                raise APIError(404, f"Invalid URL ({method} /tinker{path})")
            request = Request(method, route[2], query, body, headers, account)
            response = await route[1](self, request)
        except Exception as exc:
            response = error_response(exc, f"{method} /tinker{path}")
        stats.leave(response.status)
        return response

    def _authenticate(self, headers: dict[str, str], *, oai: bool) -> Account:
        key = headers.get("x-api-key")
        bearer = headers.get("authorization", "")
        if not key and oai and bearer.startswith("Bearer "):
            key = bearer[7:].strip()
        if not key:
            where = "an Authorization: Bearer header" if oai else "the X-API-Key header"
            raise APIError(401, f"No API key: send your Tinker key (tml-…) in {where}.")
        if key.startswith("tml-"):
            try:
                return self.sb.accounts.authenticate(f"Bearer {key}")
            except APIError:
                pass
        shown = f"{key[:4]}***{key[-4:]}" if len(key) >= 12 else "***"  # never the whole key
        raise APIError(401, f"Invalid API key {shown}: use a Tinker key (tml-…) of this server.")

    def _visible(
        self, records: dict[str, Any], record_id: Any, req: Request, what: str
    ) -> dict[str, Any]:
        found: dict[str, Any] | None = self.sb.store.visible(
            records, str(record_id), req.account.scope
        )
        if found is None:
            raise APIError(404, f"{what} {record_id} not found.")
        return found

    def session(self, req: Request, session_id: Any, *, active: bool = True) -> dict[str, Any]:
        """The session `session_id`; `active`: refused once finished."""
        found = self._visible(self.sessions, session_id, req, "Session")
        if active and found["finished"]:
            message = f"Session {session_id} is finished ({found['finished']}); start a new one."
            raise bad_request(message)
        return found

    def run(self, req: Request, model_id: Any) -> dict[str, Any]:
        return self._visible(self.runs, model_id, req, "Training run")

    def sampler(self, req: Request, sampler_id: Any) -> dict[str, Any]:
        return self._visible(self.samplers, sampler_id, req, "Sampling session")

    def checkpoint(self, req: Request, path: str, kind: str | None = None) -> dict[str, Any]:
        """The checkpoint at a `tinker://` path (of `kind`, ``weights`` or ``sampler_weights``)."""
        found = self._visible(self.checkpoints, path, req, "Checkpoint")
        if kind is not None and found["kind"] != kind:
            use = "save_state / save_weights" if kind == "weights" else "save_weights_for_sampler"
            raise bad_request(f"Checkpoint {path} is not a {kind} checkpoint: save one with {use}.")
        return found

    def new_run(self, session: dict[str, Any], seq: int, base: str) -> dict[str, Any]:
        now = self.sb.now()
        model_id = f"{session['id']}:train:{seq}"
        run = {"id": model_id, "session": session["id"], "scope": session["scope"]}
        run |= {"base_model": base, "lora_rank": 32, "seed": 0, "steps": 0, "progress": 0.0}
        run |= {"trained": {}, "created": now, "last_request": now}
        self.runs[model_id] = run
        self.pending.pop(model_id, None)
        return run

    def new_sampler(
        self,
        session: dict[str, Any],
        seq: int,
        base: str,
        model_path: str | None,
        trained: dict[str, int] | None,
    ) -> dict[str, Any]:
        """A sampling session of a base model, a sampler checkpoint, or (`trained`) the
        current weights of a training run."""
        sampler_id = f"{session['id']}:sample:{seq}"
        sampler = {"id": sampler_id, "scope": session["scope"], "base_model": base}
        sampler |= {"model_path": model_path, "trained": trained}
        if trained is not None:
            self._serve(sampler_id, base, sampler)
        self.samplers[sampler_id] = sampler
        return sampler

    def save_checkpoint(self, run: dict[str, Any], kind: str, name: str, overwrite: bool) -> str:
        path = f"tinker://{run['id']}/{kind}/{name}"
        if path in self.checkpoints and not overwrite:
            # a 400, not a 409: the SDK retries a 409 for minutes
            raise bad_request(f"Checkpoint {path} already exists; save under another name.")
        checkpoint: dict[str, Any] = {"tinker_path": path, "kind": kind}
        checkpoint["checkpoint_id"] = f"{kind}/{name}"
        checkpoint |= {k: run[k] for k in ("scope", "base_model", "lora_rank", "seed", "steps")}
        checkpoint |= {"run": run["id"], "time": self.sb.now(), "progress": run["progress"]}
        checkpoint["trained"] = dict(run["trained"])
        self.checkpoints[path] = checkpoint
        if kind == "sampler_weights":
            self._serve(path, run["base_model"], checkpoint)
        self.save()
        return path

    def _serve(self, served: str, base: str, record: dict[str, Any]) -> None:
        """Make `served` answerable: the base model, plus what the weights were trained on."""
        self.sb.simulator.register(served, base=base, persona=persona_of(record["trained"]))

    def served_model(self, sb: Sandbox, account: Account, model: Any) -> tuple[str, ModelCard]:
        """The simulator model behind an OpenAI-compatible `model`: a base model, a sampler
        checkpoint's `tinker://` path, or ``<base model>;<path>``."""
        if not isinstance(model, str) or not model:
            raise bad_request("you must provide a model parameter", param="model")
        path = model.rpartition(";")[2]
        if path in BASE_MODELS:
            return path, base_card(path)
        checkpoint = self.sb.store.visible(self.checkpoints, path, account.scope)
        if checkpoint is None:
            raise model_not_found(model)
        if checkpoint["kind"] != "sampler_weights":
            message = f"{path} is a training checkpoint: sample from one saved with "
            raise bad_request(message + "save_weights_for_sampler.", param="model")
        return path, base_card(checkpoint["base_model"])
