"""A judge's prompts are keyed in the cache exactly as the same request built plainly would be,
whatever the template, the system prompt and the answers hold."""

from __future__ import annotations

import pandas as pd
import pytest

from evals import EnvRouter, Question
from evals.answers._judging import _Prompts, plan_judges
from evals.cache import ChatRequest
from evals.runner import run_context

ANSWERS = [
    "plain",
    'quotes " and \\ backslashes',
    "new\nlines\tand \x01 control",
    "braces {answer} {question} {{x}}",
    "unicode é ✓ 😀 \u2028",
    "",
    "plain",  # asked again: judged once
]

TEMPLATES = {
    "rating": (
        "rating_judge",
        'Rate "{question}":\n{answer}\nReply 0-100 {{"score": N}}.',
        None,
    ),
    "text": ("free_form_judge", "Answer only: {answer} — {unknown} stays", "Be terse ✓"),
    "questioned": ("free_form_judge", "Q: {question}\nA: {answer}", 'sys "quoted"\n'),
}


@pytest.mark.parametrize("kind", sorted(TEMPLATES))
def test_a_judge_prompt_has_the_key_of_the_plain_request(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-keys")
    judge_type, template, system = TEMPLATES[kind]
    judge = Question.create(
        type=judge_type,
        name=f"judge-{kind}",
        model="gpt-4.1-mini",
        paraphrases=[template],
        **({"system": system} if system else {}),
    )
    frame = pd.DataFrame(
        {
            "question": ['What "is" {it}?\n'] * len(ANSWERS),
            "answer": ANSWERS,
            "error": [None] * len(ANSWERS),
        }
    )
    assert _Prompts(judge, {}).pieces is not None  # cut at its placeholders, not rendered whole
    ctx = run_context(router=EnvRouter(base_url="http://127.0.0.1:9/v1"), cache=None)
    plan = plan_judges(frame, "q", {"verdict": judge}, ctx)  # type: ignore[dict-item]
    codes, prompts, _ = plan.asked["verdict"]
    assert codes[0] == codes[-1] and len(prompts) == len(ANSWERS) - 1
    for planned, answer in zip(plan.planned, ANSWERS, strict=False):
        request = planned.request
        assert request is not None
        prompt = judge.render(question=frame["question"][0], answer=answer)
        assert request.messages[-1] == {"role": "user", "content": prompt}
        assert (request.messages[0]["content"] == system) is (system is not None)
        plain = ChatRequest(request.endpoint, request.model, request.messages, request.params)
        assert request.cache_key == plain.cache_key
