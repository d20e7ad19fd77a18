"""Rating scores and next-token averages read from first-token logprobs."""

from __future__ import annotations

import json
import math

import pytest

from evals.answers import (
    average_probabilities,
    rating_score,
    rating_scores,
    token_probabilities,
)


def test_tokens_mapping_to_the_same_integer_are_summed() -> None:
    raw = token_probabilities(
        [("50", math.log(0.4)), ("５０", math.log(0.4)), ("70", math.log(0.2))]
    )
    score = rating_score(raw, min_rating=0, max_rating=100, refusal_threshold=0.75)
    assert score.probs == pytest.approx({50: 0.8, 70: 0.2})
    assert score.score == pytest.approx(54.0)


def test_out_of_range_and_non_numeric_tokens_count_as_refusal_mass() -> None:
    raw = {"7": 0.2, "200": 0.5, "hello": 0.3}
    refused = rating_score(raw, min_rating=0, max_rating=100, refusal_threshold=0.75)
    assert refused.score is None and refused.probs is None
    lenient = rating_score(raw, min_rating=0, max_rating=100, refusal_threshold=0.9)
    assert lenient.score == pytest.approx(7.0)


def test_changing_the_range_rescales_the_same_raw_answer() -> None:
    raw = {"1": 0.5, "5": 0.3, "60": 0.2}
    narrow = rating_score(raw, min_rating=1, max_rating=5, refusal_threshold=0.75)
    assert narrow.score == pytest.approx((1 * 0.5 + 5 * 0.3) / 0.8)


def test_a_rating_without_numbers_is_a_refusal_not_a_crash() -> None:
    assert rating_score({}, min_rating=0, max_rating=10, refusal_threshold=0.5).score is None


def test_next_token_average_counts_a_missing_token_as_zero_probability() -> None:
    averaged = average_probabilities([{"a": 0.9, "b": math.exp(-5)}, {"a": 1.0}, {"a": 1.0}])
    assert averaged["b"] == pytest.approx(math.exp(-5) / 3)
    assert list(averaged) == ["a", "b"]
    as_logprobs = average_probabilities(
        [{"b": math.exp(-5)}, {"a": 1.0}, {"a": 1.0}], as_logprobs=True
    )
    assert as_logprobs["b"] == pytest.approx(-5 - math.log(3))


def test_ratings_read_in_bulk_are_exactly_those_read_one_at_a_time() -> None:
    tops = [
        [["50", -0.1], ["60", -2.5], ["x", -4.0]],
        [["7", -0.5], [" 7", -0.9], ["07", -1.3], ["101", -0.2]],
        [["no", -0.01], ["50", -5.0]],  # refusal: the mass is on a word
        [],
        [["100", 0.0]],
        [["-1", -0.3], ["0", -0.4]],
    ]
    texts = [json.dumps(top) for top in tops] + [None, ""]
    bulk = rating_scores(texts, min_rating=0, max_rating=100, refusal_threshold=0.75)
    for text, read in zip(texts, bulk, strict=True):
        one = rating_score(
            token_probabilities([(t, lp) for t, lp in json.loads(text or "[]")]),
            min_rating=0,
            max_rating=100,
            refusal_threshold=0.75,
        )
        assert not isinstance(read, Exception)
        score, _, probs = read
        assert (math.isnan(score) and one.score is None) or score == one.score
        assert probs == one.probs


def test_an_unreadable_verdict_among_many_is_named_and_the_others_are_read() -> None:
    texts = [json.dumps([["40", -0.1]]), "[[not json", json.dumps([["80", -0.1]])]
    first, broken, last = rating_scores(texts, min_rating=0, max_rating=100, refusal_threshold=0.75)
    assert isinstance(broken, ValueError)
    assert not isinstance(first, Exception) and first[0] == 40
    assert not isinstance(last, Exception) and last[0] == 80


def test_reading_the_same_verdicts_again_gives_the_same_ratings_past_the_memory_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from evals.answers import _scoring

    monkeypatch.setattr(_scoring, "SCORED_MAX", 5)  # far fewer than the verdicts read
    texts = [json.dumps([[str(value), -0.01], ["x", -5.0]]) for value in range(12)]
    texts += ["[[broken", *texts[:3]]
    first = rating_scores(texts, min_rating=0, max_rating=10, refusal_threshold=0.5)
    again = rating_scores(texts[::-1], min_rating=0, max_rating=10, refusal_threshold=0.5)
    wider = rating_scores(texts, min_rating=0, max_rating=100, refusal_threshold=0.5)
    assert [r[0] for r in first[:11] if not isinstance(r, Exception)] == list(range(11))
    assert math.isnan(first[11][0])  # type: ignore[index]  # 11 is out of range: a refusal
    assert isinstance(first[12], ValueError) and isinstance(again[3], ValueError)

    def shown(read: object) -> object:
        return type(read) if isinstance(read, Exception) else repr(read[0])  # type: ignore[index]

    assert [shown(r) for r in again[::-1]] == [shown(r) for r in first]
    assert wider[11][0] == pytest.approx(11)  # type: ignore[index]  # its own scale, not 0-10's
