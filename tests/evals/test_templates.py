"""Judge templates: only `{question}` and `{answer}` are placeholders."""

from __future__ import annotations

from evals.questions import render_template, template_fields


def test_literal_json_braces_survive_rendering() -> None:
    template = 'Rate {answer} and reply as {"score": N}.'
    assert (
        render_template(template, question="q", answer="A") == 'Rate A and reply as {"score": N}.'
    )


def test_format_style_doubled_braces_keep_working() -> None:
    template = 'Q: {question} A: {answer} Reply {{"score": N}}'
    rendered = render_template(template, question="why", answer="because")
    assert rendered == 'Q: why A: because Reply {"score": N}'


def test_braces_inside_the_answer_are_not_interpreted() -> None:
    rendered = render_template("{question} / {answer}", question="{answer}", answer="{question}")
    assert rendered == "{answer} / {question}"


def test_template_fields_sees_only_the_two_placeholders() -> None:
    assert template_fields('{answer} {"x": 1} {foo}') == {"answer"}
