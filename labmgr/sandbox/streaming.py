"""The server-sent events that stream a finished chat completion or response."""

from __future__ import annotations

import json
import re
from typing import Any

_PIECES = re.compile(r"\s*\S+|\s+")


def _deltas(text: str, entries: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The pieces `text` streams in: one per logprob entry (a token), else one per word."""
    return [(e["token"], e) for e in entries] or [(p, None) for p in _PIECES.findall(text)]


def stream_frames(response: dict[str, Any], include_usage: bool) -> list[bytes]:
    head = {"id": response["id"], "object": "chat.completion.chunk"}
    head |= {k: response[k] for k in ("created", "model", "service_tier", "system_fingerprint")}
    if include_usage:
        head["usage"] = None
    chunks: list[dict[str, Any]] = []

    def chunk(index: int, delta: dict[str, Any], logprobs: Any = None, finish: Any = None) -> None:
        choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        chunks.append(dict(head, choices=[choice]))

    for choice in response["choices"]:
        index = choice["index"]
        message = choice.get("message") or {}
        chunk(index, {"role": "assistant", "content": "", "refusal": None})
        entries = (choice.get("logprobs") or {}).get("content") or []
        for piece, entry in _deltas(message.get("content") or "", entries):
            chunk(index, {"content": piece}, entry and {"content": [entry], "refusal": None})
        if message.get("refusal"):
            chunk(index, {"refusal": message["refusal"]})
        chunk(index, {}, None, choice.get("finish_reason", "stop"))
    if include_usage:
        chunks.append(dict(head, choices=[], usage=response["usage"]))
    frames = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    frames.append(b"data: [DONE]\n\n")
    return frames


class _Events(list[dict[str, Any]]):
    def add(self, kind: str, **fields: Any) -> None:
        self.append({"type": kind, "sequence_number": len(self), **fields})


def _delta_logprob(entry: dict[str, Any]) -> dict[str, Any]:
    top = [{"token": t["token"], "logprob": t["logprob"]} for t in entry.get("top_logprobs", [])]
    return {"token": entry["token"], "logprob": entry["logprob"], "top_logprobs": top}


def _part_events(out: _Events, index: int, item: dict[str, Any]) -> None:
    """The events of an output item's parts: a reasoning summary's or a message's text."""
    reasoning = item["type"] == "reasoning"
    key, part_kind, text_kind = (
        ("summary", "reasoning_summary_part", "reasoning_summary_text")
        if reasoning
        else ("content", "content_part", "output_text")
    )
    for p_index, part in enumerate(item[key]):
        where = {"item_id": item["id"], "output_index": index, f"{key}_index": p_index}
        empty: dict[str, Any] = {"type": part["type"], "text": ""}
        if not reasoning:
            empty |= {"annotations": [], "logprobs": []}
        out.add(f"response.{part_kind}.added", **where, part=empty)
        entries = part.get("logprobs") or []
        for piece, entry in _deltas(part["text"], entries):
            extra = {} if reasoning else {"logprobs": [_delta_logprob(entry)] if entry else []}
            out.add(f"response.{text_kind}.delta", **where, delta=piece, **extra)
        extra = {} if reasoning else {"logprobs": [_delta_logprob(e) for e in entries]}
        out.add(f"response.{text_kind}.done", **where, text=part["text"], **extra)
        out.add(f"response.{part_kind}.done", **where, part=part)


def stream_events(response: dict[str, Any], starting_after: int = -1) -> list[bytes]:
    """The SSE frames of `response`, those with a sequence number above `starting_after`."""
    out = _Events()
    opening = {**response, "status": "in_progress", "completed_at": None, "output": []}
    opening["incomplete_details"] = None
    del opening["usage"]  # none yet, and the spec has no null for it
    out.add("response.created", response=opening)
    out.add("response.in_progress", response=opening)
    for index, item in enumerate(response["output"]):
        reasoning = item["type"] == "reasoning"
        if reasoning:
            added = {"id": item["id"], "type": "reasoning", "summary": []}
        else:
            added = {**item, "status": "in_progress", "content": []}
        out.add("response.output_item.added", output_index=index, item=added)
        _part_events(out, index, item)
        out.add("response.output_item.done", output_index=index, item=item)
    terminal = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
    out.add(terminal, response=response)
    return [
        b"event: " + event["type"].encode() + b"\ndata: " + json.dumps(event).encode() + b"\n\n"
        for event in out
        if event["sequence_number"] > starting_after
    ]
