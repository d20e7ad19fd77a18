"""Prompt grids (docs/workflows.md): factors whose levels (a list, label → text, or label →
placeholder → text) fill a template; every combination of levels is one prompt."""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evals.questions._templates import render_placeholders, template_names
from evals.stats import COMPARISON_COLUMNS, LEVEL_COMPARISON_COLUMNS, SUMMARY_COLUMNS

GridOption = dict[str, list[str] | dict[str, str] | dict[str, dict[str, str]]]
"""A grid as a question stores it: each factor's levels with every value as text."""

RESERVED_COLUMNS = frozenset(
    {
        "model",
        "group",
        "question",
        "paraphrase_ix",
        "sample_ix",
        "item",
        "target",
        "correct",
        "answer",
        "raw_answer",
        "probs",
        "p_correct",
        "api_kwargs",
        "finish_reason",
        "error",
        "reasoning_tokens",
        "prompt_tokens",
        "completion_tokens",
        "cost",
        "judge_cost",
    }
)
"""Columns of a question's frame: no factor or judge takes these names."""
_TABLE_COLUMNS = frozenset({"id", *SUMMARY_COLUMNS, *COMPARISON_COLUMNS, *LEVEL_COMPARISON_COLUMNS})
"""Columns of the summary, the comparisons and a label file, which a factor joins."""
_RESERVED_SUFFIXES = ("_question", "_raw_answer", "_probs", "_api_kwargs", "_cost")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True)
class GridPrompt:
    """One combination of levels: the prompt and each factor's level label."""

    text: str
    levels: dict[str, str]


def _text(value: Any, where: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{where} must be text or a number, got {type(value).__name__}")
    return str(value)


def _factor(name: str, levels: Any) -> list[str] | dict[str, str] | dict[str, dict[str, str]]:
    where = f"factor {name!r}"
    if isinstance(levels, list | tuple | Mapping) and not levels:
        raise ValueError(f"{where} has no levels")
    if isinstance(levels, list | tuple):
        if any(isinstance(level, Mapping) for level in levels):
            raise ValueError(
                f"{where}: a level made of several texts needs a label; write it as a mapping "
                f"of label to texts, e.g. {name}: {{landlord: {{asker: …, side: …}}, …}}"
            )
        texts = [_text(level, f"{where}: level {level!r}") for level in levels]
        _unique(texts, where)
        return texts
    if isinstance(levels, Mapping):
        labels = [_text(label, f"{where}: label {label!r}") for label in levels]
        _unique(labels, where)
        values = list(levels.values())
        if all(isinstance(v, Mapping) for v in values):
            whole: dict[str, dict[str, str]] = {}
            for label, texts in zip(labels, values, strict=True):
                filled = {
                    _placeholder(str(k), where): _text(v, f"{where}: level {label!r}: {k!r}")
                    for k, v in texts.items()
                }
                if not filled:
                    raise ValueError(f"{where}: level {label!r} fills no placeholder")
                keys = next(iter(whole.values()), filled)
                if set(filled) != set(keys):
                    raise ValueError(
                        f"{where}: level {label!r} fills {', '.join(sorted(filled))} but the "
                        f"first level fills {', '.join(sorted(keys))}; every level must fill "
                        "the same placeholders"
                    )
                whole[label] = filled
            return whole
        if any(isinstance(v, Mapping) for v in values):
            raise ValueError(f"{where}: levels are either all texts or all mappings of texts")
        return {
            label: _text(v, f"{where}: level {label!r}")
            for label, v in zip(labels, values, strict=True)
        }
    raise ValueError(
        f"{where} must be a list of levels or a mapping of label to level, "
        f"got {type(levels).__name__}"
    )


def _placeholder(name: str, where: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ValueError(f"{where}: placeholder {name!r} is not a name (letters, digits, _)")
    return name


def _unique(labels: list[str], where: str) -> None:
    twice = [label for label in labels if labels.count(label) > 1]
    if twice:
        raise ValueError(f"{where}: level {twice[0]!r} is given twice")


def normalise_grid(value: Any) -> GridOption | None:
    """The grid option read from YAML or Python (numbers become text)."""
    if value is None:
        return None
    if not isinstance(value, Mapping) or not value:
        raise ValueError("must be a mapping of factor name to its levels")
    grid: GridOption = {}
    for name, levels in value.items():
        factor = _placeholder(str(name), f"factor {name!r}")
        grid[factor] = _factor(factor, levels)
    return grid


def _choices(
    name: str, levels: list[str] | dict[str, str] | dict[str, dict[str, str]]
) -> list[tuple[str, dict[str, str]]]:
    if isinstance(levels, list):
        return [(level, {name: level}) for level in levels]
    return [
        (label, {name: label, **value} if isinstance(value, dict) else {name: value})
        for label, value in levels.items()
    ]


def check_grid(grid: GridOption, template: str) -> None:
    """Every placeholder of the template is filled by exactly one factor, and every factor
    fills one the template uses (else its levels would repeat the same prompts)."""
    used = template_names(template)
    owner: dict[str, str] = {}
    for name, levels in grid.items():
        fills = set(_choices(name, levels)[0][1])  # every level fills the same ones
        for placeholder in fills:
            if placeholder in owner:
                raise ValueError(
                    f"factors {owner[placeholder]!r} and {name!r} both fill {{{placeholder}}}"
                )
            owner[placeholder] = name
        if not fills & used:
            listed = ", ".join("{" + p + "}" for p in sorted(fills))
            raise ValueError(
                f"factor {name!r} fills {listed}, which the template does not use; use it or "
                "remove the factor"
            )


def grid_prompts(grid: GridOption, template: str) -> list[GridPrompt]:
    wanted = template_names(template)
    prompts = []
    for combination in itertools.product(*(_choices(name, grid[name]) for name in grid)):
        used = {k: v for _, filled in combination for k, v in filled.items() if k in wanted}
        levels = {name: label for name, (label, _) in zip(grid, combination, strict=True)}
        prompts.append(GridPrompt(render_placeholders(template, used), levels))
    return prompts


def reserved_name(name: str) -> str | None:
    """Why a judge or a factor may not take `name` (a column the frame has or makes), or None."""
    if name in RESERVED_COLUMNS:
        return "it is a column of the frame"
    if name.startswith(("_", "human_")) or name.endswith(_RESERVED_SUFFIXES):
        suffixes = ", ".join(_RESERVED_SUFFIXES)
        return f"names starting with '_' or 'human_', or ending with {suffixes}, are reserved"
    return None


def check_factor_names(grid: GridOption, taken: Mapping[str, str]) -> None:
    """No factor is named like a frame or summary column, a reserved name, or one of `taken`
    (name → what it is: a judge, a score, a metric)."""
    for name in grid:
        if name in RESERVED_COLUMNS or name in _TABLE_COLUMNS:
            raise ValueError(
                f"factor {name!r} has the name of a column of the frame or the summary; rename it"
            )
        why = reserved_name(name)
        if why:
            raise ValueError(f"factor {name!r}: {why}; rename it")
        if name in taken:
            raise ValueError(f"factor {name!r} has the name of {taken[name]}; rename one of them")
