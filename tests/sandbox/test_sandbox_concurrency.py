"""Many concurrent requests complete (AsyncOpenAI, one client)."""

from __future__ import annotations

import asyncio

from openai import AsyncOpenAI

from labmgr.sandbox import SandboxHandle, run_sandbox


def test_500_concurrent_chat_requests_all_complete() -> None:
    async def main(base_url: str) -> list[str]:
        async with AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
            responses = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="gpt-4o-mini",
                        messages=[{"role": "user", "content": f"Question {i}"}],
                        logprobs=True,
                        top_logprobs=5,
                    )
                    for i in range(500)
                )
            )
        return [r.id for r in responses]

    # A subprocess server (its own CPU); latency keeps the requests in flight together.
    with run_sandbox(latency_ms=50, in_process=False) as sb:
        ids = asyncio.run(main(sb.base_url))
        stats = sb.stats()
    assert len(set(ids)) == 500
    assert stats["requests"]["chat.completions"] == 500
    assert stats["statuses"] == {"200": 500}
    assert stats["peak_concurrency"] > 1


def test_a_reset_while_requests_run_keeps_them_counted_in_flight() -> None:
    async def main(sb: SandboxHandle, base_url: str) -> dict:
        async with AsyncOpenAI(base_url=base_url, api_key="sk-test", max_retries=0) as client:
            asking = asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="gpt-4o-mini", messages=[{"role": "user", "content": f"Q {i}"}]
                    )
                    for i in range(5)
                )
            )
            task = asyncio.ensure_future(asking)
            while not sb.stats()["in_flight"]:
                await asyncio.sleep(0.01)
            await asyncio.to_thread(sb.reset)
            await task
        return sb.stats()

    with run_sandbox(latency_ms=400, in_process=False) as sb:
        stats = asyncio.run(main(sb, sb.base_url))
    assert stats["in_flight"] == 0  # not negative: the reset did not forget them
    assert stats["statuses"] == {"200": 5} and stats["peak_concurrency"] >= 1
