"""Start the offline sandbox, list its models and ask one question.

    python examples/sandbox_smoke.py

Everything runs locally: the sandbox speaks the OpenAI API, so the official client works
unchanged once `base_url` points at it.
"""

from __future__ import annotations

from openai import OpenAI

from labmgr.sandbox import run_sandbox


def main() -> None:
    with run_sandbox() as sandbox:
        print(f"sandbox listening at {sandbox.base_url}")
        client = OpenAI(base_url=sandbox.base_url, api_key="sk-test-smoke")
        models = [model.id for model in client.models.list()]
        print(f"{len(models)} models, e.g. {', '.join(models[:5])}")
        response = client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": "In one sentence, what is fine-tuning?"}],
        )
        print(f"{response.model}: {response.choices[0].message.content}")
        print(f"served: {sandbox.stats()['requests']}")


if __name__ == "__main__":
    main()
