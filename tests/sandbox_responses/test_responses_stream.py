"""Streamed responses: the raw event sequence and the SDK's stream helpers, in strict mode."""

from __future__ import annotations

import asyncio

import httpx2
from openai import AsyncOpenAI, OpenAI

from labmgr.sandbox import SandboxHandle

QUESTION = "How do tides work?"
MESSAGE_EVENTS = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]


def _collapsed(kinds: list[str]) -> list[str]:
    """Event types with runs of the same delta event shown once."""
    out: list[str] = []
    for kind in kinds:
        if not (out and out[-1] == kind and kind.endswith(".delta")):
            out.append(kind)
    return out


def test_raw_events_come_in_the_api_order_with_sequence_numbers(sandbox_client: OpenAI) -> None:
    events = list(
        sandbox_client.responses.create(model="gpt-4.1-mini", input=QUESTION, stream=True)
    )
    kinds = [event.type for event in events]
    assert _collapsed(kinds) == [
        "response.created",
        "response.in_progress",
        *MESSAGE_EVENTS,
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert kinds.count("response.output_text.delta") > 3  # the text arrives in pieces
    created, final = events[0], events[-1]
    assert created.type == "response.created" and final.type == "response.completed"
    assert created.response.status == "in_progress" and created.response.output == []
    assert created.response.id == final.response.id
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas == final.response.output_text
    done = next(e for e in events if e.type == "response.output_text.done")
    assert done.type == "response.output_text.done" and done.text == deltas
    assert sandbox_client.responses.retrieve(final.response.id) == final.response


def test_frames_name_their_event_and_no_done_marker_follows(sandbox: SandboxHandle) -> None:
    with httpx2.Client(trust_env=False) as http:
        reply = http.post(
            f"{sandbox.base_url}/responses",
            headers={"Authorization": "Bearer sk-test"},
            json={"model": "gpt-4.1-mini", "input": "Hi.", "stream": True},
        )
    assert reply.headers["content-type"].startswith("text/event-stream")
    frames = reply.text.strip().split("\n\n")
    assert frames[0].startswith("event: response.created\ndata: {")
    assert frames[-1].startswith("event: response.completed\ndata: {")
    assert "[DONE]" not in reply.text


def test_the_stream_helper_accumulates_the_final_response(sandbox_client: OpenAI) -> None:
    with sandbox_client.responses.stream(model="gpt-4.1-mini", input=QUESTION) as stream:
        snapshots = [e.snapshot for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed" and final.output_text
    assert snapshots[-1] == final.output_text
    assert all(final.output_text.startswith(s) for s in snapshots)


def test_a_reasoning_model_streams_its_summary_before_the_message(
    sandbox_client: OpenAI,
) -> None:
    with sandbox_client.responses.stream(
        model="gpt-5-mini", input=QUESTION, reasoning={"effort": "low", "summary": "detailed"}
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()
    assert _collapsed([e.type for e in events]) == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        *MESSAGE_EVENTS,
        "response.completed",
    ]
    assert [item.type for item in final.output] == ["reasoning", "message"]
    summary = "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    reasoning = final.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == summary
    text_events = [e for e in events if e.type == "response.output_text.delta"]
    assert {e.output_index for e in text_events} == {1}
    assert final.usage is not None and final.usage.output_tokens_details.reasoning_tokens > 0


def test_a_budget_that_runs_out_ends_with_response_incomplete(sandbox_client: OpenAI) -> None:
    events = list(
        sandbox_client.responses.create(
            model="gpt-5-mini", input=QUESTION, max_output_tokens=16, stream=True
        )
    )
    final = events[-1]
    assert final.type == "response.incomplete"
    assert final.response.incomplete_details is not None
    assert final.response.incomplete_details.reason == "max_output_tokens"
    assert not any(e.type == "response.output_text.delta" for e in events)


def test_streamed_logprobs_arrive_with_each_delta(sandbox_client: OpenAI) -> None:
    events = list(
        sandbox_client.responses.create(
            model="gpt-4.1-mini",
            input="Is the sky blue? Answer yes or no.",
            include=["message.output_text.logprobs"],
            top_logprobs=2,
            max_output_tokens=16,
            stream=True,
        )
    )
    deltas = [e for e in events if e.type == "response.output_text.delta"]
    assert deltas and all(len(e.logprobs) == 1 for e in deltas)
    assert all(e.logprobs[0].token == e.delta for e in deltas)
    assert all(len(e.logprobs[0].top_logprobs or []) == 2 for e in deltas)


def test_a_stored_response_replays_its_events_after_a_sequence_number(
    sandbox_client: OpenAI,
) -> None:
    first = list(sandbox_client.responses.create(model="gpt-4.1-mini", input="Hi.", stream=True))
    response_id = first[-1].response.id  # type: ignore[union-attr]
    replay = list(sandbox_client.responses.retrieve(response_id, stream=True, starting_after=3))
    assert [e.sequence_number for e in replay] == list(range(4, len(first)))
    assert [e.type for e in replay] == [e.type for e in first[4:]]


def test_the_async_client_streams_the_same_way(sandbox: SandboxHandle) -> None:
    async def run() -> list[str]:
        async with AsyncOpenAI(
            base_url=sandbox.base_url,
            api_key="sk-test",
            max_retries=0,
            _strict_response_validation=True,
        ) as client:
            async with client.responses.stream(model="gpt-5-nano", input=QUESTION) as stream:
                kinds = [event.type async for event in stream]
                final = await stream.get_final_response()
            assert final.output_text
            return kinds

    kinds = asyncio.run(run())
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
