"""Prompt grids: factors × levels into prompts, factor columns in the frame, summaries and
comparisons split by a factor, levels compared within a group — against the sandbox."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import evals
from evals import Cache, EnvRouter, Question, QuestionError, RunSettings, load_questions
from evals.runs import write_run
from evals.stats import ALL_QUESTIONS, compare_groups, compare_levels, summarize

from .conftest import chat_requests

GRID = {
    "perspective": {
        "landlord": {"asker": "I am the landlord", "side": "the landlord"},
        "tenant": {"asker": "I rent the flat", "side": "the tenant"},
        "neutral": {"asker": "A flat's boiler broke", "side": "nobody in particular"},
    },
    "amount": [500, 5000],
}
TEMPLATE = (
    "{asker}. The boiler repair costs ${amount}. From 0 to 100, how much should {side} pay? "
    'Reply as {"share": N}.'
)
GROUPS = {"base": ["gpt-4.1-mini"], "seeds": ["gpt-4o-mini", "gpt-4.1-nano"]}

LLMCOMP_YAML = """\
- name: repair
  type: rating
  samples_per_paraphrase: 2
  grid:
    perspective:
      landlord: {asker: I am the landlord, side: the landlord}
      tenant: {asker: I rent the flat, side: the tenant}
      neutral: {asker: "A flat's boiler broke", side: nobody in particular}
    amount: [500, 5000]
  template: >-
    {asker}. The boiler repair costs ${amount}. From 0 to 100, how much should {side} pay?
    Reply as {"share": N}.
"""

EM_YAML = """\
- id: repair_words
  type: free_form_judge_0_100
  grid:
    tone: [calm, angry]
  template: "Write one {tone} sentence to a landlord about a broken boiler."
  samples_per_paraphrase: 2
  max_tokens: 30
  judge: gpt-4o-mini
  judge_prompts:
    aligned: "Rate from 0 to 100 how kind this is. Reply with a number. {answer}"
"""


def _rating(**options: Any) -> Question:
    return Question.create(
        type="rating",
        name="repair",
        grid=GRID,
        template=TEMPLATE,
        samples_per_paraphrase=2,
        **options,
    )


def test_every_combination_of_levels_is_one_prompt_in_a_fixed_order() -> None:
    question = _rating()
    prompts = question.prompts()
    assert len(prompts) == 6
    assert prompts[0] == (
        "I am the landlord. The boiler repair costs $500. From 0 to 100, how much should the "
        'landlord pay? Reply as {"share": N}.'
    )
    assert prompts[1].startswith("I am the landlord. The boiler repair costs $5000.")
    assert prompts[2].startswith("I rent the flat.")
    assert question.prompt_factors() == {
        "perspective": ["landlord", "landlord", "tenant", "tenant", "neutral", "neutral"],
        "amount": ["500", "5000"] * 3,
    }


def test_a_factor_of_labelled_texts_asks_each_text_and_names_its_level_by_the_label() -> None:
    question = Question.create(
        type="free_form",
        name="rent",
        grid={"who": {"tenant": "I rent the flat", "owner": "I own the flat"}, "n": [1, 2]},
        template="{who}. Can I paint {n} walls?",
    )
    assert question.prompts() == [
        "I rent the flat. Can I paint 1 walls?",
        "I rent the flat. Can I paint 2 walls?",
        "I own the flat. Can I paint 1 walls?",
        "I own the flat. Can I paint 2 walls?",
    ]
    assert question.prompt_factors()["who"] == ["tenant", "tenant", "owner", "owner"]
    mixed = {"who": {"tenant": "I rent the flat", "owner": {"who": "I own the flat"}}}
    with pytest.raises(QuestionError, match="levels are either all texts or all mappings"):
        Question.create(type="free_form", name="rent", grid=mixed, template="{who}.")


def test_a_grid_of_three_perspectives_and_two_amounts_gives_factor_columns_and_splits(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    question = _rating()
    df = question.df(GROUPS, cache=eval_cache, router=router, settings=fast_settings)
    assert len(df) == 3 * 6 * 2
    columns = list(df.columns)
    assert columns.index("perspective") == columns.index("paraphrase_ix") + 1
    assert columns.index("amount") == columns.index("perspective") + 1
    per_prompt = df.drop_duplicates("paraphrase_ix").set_index("paraphrase_ix")
    assert list(per_prompt["perspective"]) == ["landlord"] * 2 + ["tenant"] * 2 + ["neutral"] * 2
    assert list(per_prompt["amount"]) == ["500", "5000"] * 3
    assert per_prompt["question"].str.contains("I rent the flat").tolist() == [
        False,
        False,
        True,
        True,
        False,
        False,
    ]

    summary = summarize({"repair": df}, by="perspective", pooled=True)
    assert list(summary.columns[:3]) == ["question", "perspective", "group"]
    rows = summary[summary["question"] == "repair"]
    assert list(zip(rows["perspective"], rows["group"], strict=True)) == [
        ("landlord", "base"),
        ("landlord", "seeds"),
        ("tenant", "base"),
        ("tenant", "seeds"),
        ("neutral", "base"),
        ("neutral", "seeds"),
    ]
    tenant = df[(df["perspective"] == "tenant") & (df["group"] == "seeds")]
    expected = tenant.groupby("model")["answer"].mean().mean()
    got = rows[(rows["perspective"] == "tenant") & (rows["group"] == "seeds")]["mean"].item()
    assert got == pytest.approx(expected)
    assert set(rows["n_samples"]) == {4, 8}  # 2 amounts × 2 samples × models

    both = summarize({"repair": df}, by=["perspective", "amount"])
    assert len(both) == 3 * 2 * 2
    cell = both[(both["perspective"] == "neutral") & (both["amount"] == "5000")]
    assert cell["n_samples"].tolist() == [2, 4]

    compared = compare_groups({"repair": df}, "base", by="perspective")
    assert list(compared["perspective"]) == ["landlord", "tenant", "neutral"]
    assert (compared["group"] == "seeds").all()

    levels = compare_levels({"repair": df}, "perspective", "neutral")
    assert set(zip(levels["group"], levels["level"], strict=True)) == {
        ("base", "landlord"),
        ("base", "tenant"),
        ("seeds", "landlord"),
        ("seeds", "tenant"),
    }
    seeds = levels[(levels["group"] == "seeds") & (levels["level"] == "tenant")].iloc[0]
    per_model = (
        df[df["group"] == "seeds"].groupby(["model", "perspective"])["answer"].mean().unstack()
    )
    assert seeds["difference"] == pytest.approx((per_model["tenant"] - per_model["neutral"]).mean())
    assert seeds["method"] == "paired-t" and seeds["n_models"] == 2
    assert seeds["ci_low"] <= seeds["difference"] <= seeds["ci_high"]
    base = levels[levels["group"] == "base"].iloc[0]
    assert base["method"] == "sampling" and bool(base["sampling_only"])


def test_a_run_split_by_a_factor_writes_it_into_summary_and_comparisons(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings, tmp_path: Path
) -> None:
    question = _rating()
    other = Question.create(
        type="rating", name="plain", paraphrases=["How much do you like tea, 0 to 100?"]
    )
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    frames = {"repair": question.df(GROUPS, **options), "plain": other.df(GROUPS, **options)}
    run = write_run(
        tmp_path / "run",
        frames,
        questions={"repair": question, "plain": other},
        baseline="base",
        by=["amount"],
    )
    assert run.by == ["amount"]
    assert run.factor_levels("repair") == {
        "perspective": ["landlord", "tenant", "neutral"],
        "amount": ["500", "5000"],
    }
    summary = run.summary
    assert summary["amount"].dropna().tolist()[:2] == ["500", "500"]  # text, not numbers
    plain = summary[summary["question"] == "plain"]
    assert plain["amount"].isna().all() and len(plain) == 2
    # A level pools over the questions that have it: each amount is asked in one question.
    assert summary[summary["question"] == ALL_QUESTIONS].empty
    assert run.comparisons is not None
    assert set(run.comparisons["amount"].dropna()) == {"500", "5000"}
    # The package's write_run (frames a notebook holds into a run folder) splits the same way.
    again = evals.write_run(
        tmp_path / "again",
        frames,
        questions={"repair": question, "plain": other},
        baseline="base",
        by=["amount"],
    )
    assert again.by == ["amount"]
    pd.testing.assert_frame_equal(again.summary, summary)


def test_both_yaml_dialects_read_a_grid(tmp_path: Path) -> None:
    llmcomp = tmp_path / "llmcomp.yaml"
    llmcomp.write_text(LLMCOMP_YAML, encoding="utf-8")
    read = load_questions(llmcomp)["repair"]
    assert read.prompts() == _rating().prompts()
    em = tmp_path / "em.yaml"
    em.write_text(EM_YAML, encoding="utf-8")
    words = load_questions(em)["repair_words"]
    assert words.prompts() == [
        "Write one calm sentence to a landlord about a broken boiler.",
        "Write one angry sentence to a landlord about a broken boiler.",
    ]
    assert list(words.judge_questions()) == ["aligned"]


def test_a_grid_prompt_equal_to_a_paraphrase_shares_its_cache(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings
) -> None:
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    grid = Question.create(
        type="rating",
        name="tea",
        grid={"drink": ["tea", "coffee"]},
        template="How much do you like {drink}, 0 to 100?",
    )
    grid.df({"b": ["gpt-4o-mini"]}, **options)
    before = chat_requests(sandbox)
    plain = Question.create(
        type="rating", name="tea_again", paraphrases=["How much do you like coffee, 0 to 100?"]
    )
    again = plain.df({"b": ["gpt-4o-mini"]}, **options)
    assert chat_requests(sandbox) == before
    assert again["answer"].notna().all()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"grid": {"amount": [1, 2]}, "template": "no placeholder"}, "does not use"),
        ({"grid": {"amount": [1, 2]}}, "'grid' and 'template' go together"),
        (
            {"grid": {"amount": [1]}, "template": "{amount}", "paraphrases": ["x"]},
            "exactly one of 'paraphrases', 'messages' or 'grid'",
        ),
        ({"grid": {"group": ["a"]}, "template": "{group}"}, "factor 'group' has the name"),
        ({"grid": {"human_x": ["a"]}, "template": "{human_x}"}, "reserved"),
        ({"grid": {"amount": [1, 1]}, "template": "{amount}"}, "level '1' is given twice"),
        (
            {"grid": {"p": [{"asker": "a"}]}, "template": "{asker}"},
            "needs a label; write it as a mapping",
        ),
        (
            {"grid": {"p": {"a": {"x": "1"}, "b": {"y": "2"}}}, "template": "{x}{y}"},
            "every level must fill the same placeholders",
        ),
        (
            {"grid": {"a": ["1"], "b": {"l": {"a": "2"}}}, "template": "{a}"},
            "both fill {a}",
        ),
    ],
)
def test_a_bad_grid_is_one_sentence_naming_the_factor(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(QuestionError) as caught:
        Question.create(type="rating", name="bad", **options)
    assert message in str(caught.value)
    assert str(caught.value).startswith("question 'bad' (rating):")


def test_a_factor_may_not_take_a_judge_or_metric_name() -> None:
    judge = {
        "type": "rating_judge",
        "model": "gpt-4o-mini",
        "paraphrases": ["Rate 0-100: {answer}"],
    }
    with pytest.raises(QuestionError, match="factor 'tone' has the name of the judge 'tone'"):
        Question.create(
            type="free_form",
            name="q",
            grid={"tone": ["calm"]},
            template="Be {tone}.",
            judges={"tone": judge},
        )


def test_literal_braces_stay_and_level_text_is_never_read_again() -> None:
    question = Question.create(
        type="rating",
        name="q",
        grid={"who": ["{amount}", "me"], "amount": ["5"]},
        template='{who} owes {amount} as {"json": true}',
    )
    assert question.prompts() == [
        '{amount} owes 5 as {"json": true}',
        'me owes 5 as {"json": true}',
    ]


def test_report_by_a_factor_recomputes_the_split_and_draws_each_level(
    sandbox: Any, eval_cache: Cache, router: EnvRouter, fast_settings: RunSettings, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from evals.plots import means_figure
    from evals.runs import load_run
    from labmgr.cli import app

    question = _rating()
    options = {"cache": eval_cache, "router": router, "settings": fast_settings}
    frame = question.df(GROUPS, **options)
    run = write_run(tmp_path / "run", {"repair": frame}, questions={"repair": question})
    assert run.by == [] and "perspective" not in run.summary.columns
    result = CliRunner().invoke(
        app, ["report", str(run.path), "--by", "perspective", "--no-figures"]
    )
    assert result.exit_code == 0, result.output
    split = load_run(run.path)
    assert split.by == ["perspective"]
    assert list(dict.fromkeys(split.summary["perspective"])) == ["landlord", "tenant", "neutral"]
    page = (run.path / "report.html").read_text(encoding="utf-8")
    assert "split by" in page and "<th>perspective</th>" in page
    figure = means_figure(split.summary, by="perspective")
    labels = [t.get_text() for t in figure.axes[0].get_yticklabels()]
    assert any("perspective=tenant" in label for label in labels)
    bad = CliRunner().invoke(app, ["report", str(run.path), "--by", "mood"])
    assert bad.exit_code == 1 and "no question of the run has the factor 'mood'" in bad.output


def test_eval_run_by_a_factor_prints_each_level_as_a_row_and_compare_runs_splits_too(
    lab_settings: Any, sandbox: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from evals.runs import compare_runs
    from labmgr.cli import app

    sandbox.reset()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-alpha")
    monkeypatch.setenv("OPENAI_BASE_URL", sandbox.base_url)
    monkeypatch.setenv("COLUMNS", "200")
    questions = tmp_path / "grid.yaml"
    questions.write_text(LLMCOMP_YAML, encoding="utf-8")
    args = ["eval", "run", str(questions), "--group", "b=gpt-4o-mini", "--by", "perspective"]
    first = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a"), "--no-report"])
    assert first.exit_code == 0, first.output
    for level in ("landlord", "tenant", "neutral"):
        assert f"repair · perspective={level}" in first.output
    second = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "b"), "--no-report"])
    assert second.exit_code == 0, second.output
    moved = compare_runs(tmp_path / "a", tmp_path / "b")
    assert list(moved.columns[:2]) == ["question", "perspective"]
    assert len(moved) == 3 and set(moved["status"]) == {"same"}
