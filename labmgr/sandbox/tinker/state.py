"""What the sandbox's Tinker remembers: sessions, training runs, checkpoints and sampling
sessions (JSON-ready dicts, kept across restarts in the store's `tinker.json` blob), and the
results of futures (memory only)."""

from __future__ import annotations

import json
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any

from labmgr.sandbox.store import Store, request_id

__all__ = ["Future", "TinkerState", "iso"]

BLOB = "tinker.json"
_SAVED = ("sessions", "runs", "checkpoints", "samplers")
FUTURES_KEPT = 10_000
Future = tuple[bytes | dict[str, Any], str]
"""A finished future's result: a JSON object or protobuf bytes, and its content type."""


def iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


class TinkerState:
    def __init__(self, store: Store) -> None:
        self.store = store
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

    def save(self) -> None:
        """Write the records to the state directory (if there is one)."""
        if self.store.state_dir is not None:
            records = {name: getattr(self, name) for name in _SAVED}
            self.store.put_blob(BLOB, json.dumps(records).encode())

    def new_session(self, scope: str, now: float) -> dict[str, Any]:
        session: dict[str, Any] = {"id": str(uuid.uuid4()), "scope": scope, "created": now}
        session["finished"] = None
        session |= {"models": 0, "samplers": 0, "heartbeats": 0}
        self.sessions[session["id"]] = session
        return session

    def finish(self, result: bytes | dict[str, Any], content_type: str = "json") -> str:
        """Keep a finished future's result; returns its request id."""
        rid = request_id("tinker-req-")
        self.futures[rid] = (result, content_type)
        if len(self.futures) > FUTURES_KEPT:
            self.futures.popitem(last=False)
        return rid
