"""What each model accepts in a chat request: one table of OpenAI's chat API (2025-08), by
model family, that a lab's ``[models."GLOB"]`` overrides. See docs/design/capabilities.md.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from labmgr.errors import ConfigError
from labmgr.pricing import base_of, first_match

CAPABILITY_TABLE_DATE = "2025-08"

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]
REASONING_EFFORTS: tuple[str, ...] = ("none", "minimal", "low", "medium", "high", "xhigh", "max")

TokenLimit = Literal["max_tokens", "max_completion_tokens"]


class ModelCapabilities(BaseModel):
    """What a model accepts in a chat completion request."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    reasoning: bool = False
    """A reasoning model: hidden reasoning tokens come out of the completion budget first."""
    temperature: bool = True
    """Any temperature (0–2); False: only the default, 1."""
    top_p: bool = True
    logprobs: bool = True
    top_logprobs: int = Field(default=20, ge=0)
    logit_bias: bool = True
    stop: bool = True
    """Whether stop sequences are accepted (reasoning models refuse them)."""
    token_limit: TokenLimit = "max_tokens"
    """How the completion budget is spelled (reasoning models refuse ``max_tokens``)."""
    reasoning_efforts: tuple[ReasoningEffort, ...] = ()
    """The ``reasoning_effort`` values accepted; empty: the parameter is not sent."""
    default_reasoning_effort: ReasoningEffort | None = None
    n: bool = True
    """Whether several choices of one prompt can come from one request (``n > 1``)."""

    @model_validator(mode="after")
    def _default_effort_is_accepted(self) -> ModelCapabilities:
        default = self.default_reasoning_effort
        if default is not None and self.reasoning_efforts and default not in self.reasoning_efforts:
            raise ValueError(
                f"default_reasoning_effort {default!r} is not one of reasoning_efforts "
                f"{list(self.reasoning_efforts)}"
            )
        return self

    def describe(self) -> dict[str, str]:
        """Each capability in words (`labmgr models capabilities`)."""
        efforts = ", ".join(self.reasoning_efforts) or "not sent"
        if self.reasoning_efforts and self.default_reasoning_effort:
            efforts += f" (API default: {self.default_reasoning_effort})"
        return {
            "reasoning": "yes" if self.reasoning else "no",
            "temperature": "0–2" if self.temperature else "1 only",
            "top_p": "accepted" if self.top_p else "refused",
            "logprobs": f"yes ({self.top_logprobs} top)" if self.logprobs else "no",
            "logit_bias": "accepted" if self.logit_bias else "refused",
            "stop": "accepted" if self.stop else "refused",
            "token_limit": self.token_limit,
            "reasoning_effort": efforts,
            "n": "yes" if self.n else "no (one request per sample)",
        }


class CapabilityOverride(ModelCapabilities):
    """``[models."GLOB"]`` in a lab's config: the fields it sets change matching models."""

    @model_validator(mode="after")
    def _default_effort_is_accepted(self) -> CapabilityOverride:
        return self  # checked once applied: the efforts may come from the model's family

    def applied_to(self, base: ModelCapabilities) -> ModelCapabilities:
        """`base` with the fields this override sets (new efforts without the base's default
        leave the default unknown)."""
        fields = {**base.model_dump(), **self.model_dump(include=self.model_fields_set)}
        efforts, default = fields["reasoning_efforts"], fields["default_reasoning_effort"]
        keeps_default = "default_reasoning_effort" in self.model_fields_set
        if not keeps_default and default is not None and default not in efforts:
            fields["default_reasoning_effort"] = None
        return ModelCapabilities.model_validate(fields)


def _reasoning(
    efforts: tuple[ReasoningEffort, ...], default: ReasoningEffort | None
) -> ModelCapabilities:
    return ModelCapabilities(
        reasoning=True,
        temperature=False,
        top_p=False,
        logprobs=False,
        top_logprobs=0,
        logit_bias=False,
        stop=False,
        token_limit="max_completion_tokens",
        reasoning_efforts=efforts,
        default_reasoning_effort=default,
    )


_CHAT = ModelCapabilities()
# Tinker's OpenAI-compatible endpoint (docs, 2026-11) returns no logprobs (its chat answers
# carry `logprobs: null`) and says nothing of `n`, `logit_bias`: one sample per request.
_TINKER = ModelCapabilities(logprobs=False, top_logprobs=0, logit_bias=False, n=False)
_O_SERIES = _reasoning(("low", "medium", "high"), "medium")
_GPT_5 = _reasoning(("minimal", "low", "medium", "high"), "medium")

_TABLE: dict[str, ModelCapabilities] = {
    **dict.fromkeys(("gpt-3.5-turbo", "gpt-4", "gpt-4-turbo", "gpt-4o", "gpt-4o-mini"), _CHAT),
    **dict.fromkeys(("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"), _CHAT),
    "gpt-5-chat-latest": _CHAT.model_copy(update={"token_limit": "max_completion_tokens"}),
    "o1": _O_SERIES,
    "o1-mini": _reasoning((), None),  # takes no reasoning_effort at all
    **dict.fromkeys(("o3", "o3-mini", "o4-mini"), _O_SERIES),
    **dict.fromkeys(("gpt-5", "gpt-5-mini", "gpt-5-nano"), _GPT_5),
    # Released after the table's date; its effort starts at "none" (no reasoning).
    "gpt-5.1": _reasoning(("none", "low", "medium", "high"), "none"),
}


TINKER_FAMILY = "Tinker"
TINKER_MODEL_PATTERNS: tuple[str, ...] = (
    "Qwen/*",
    "meta-llama/Llama-*",
    "deepseek-ai/*",
    "moonshotai/Kimi-*",
    "thinkingmachines/*",
)
"""Tinker's base models (its catalogue, named as on Hugging Face; OpenRouter's lower-case
``qwen/…``, ``meta-llama/llama-…`` ids do not match)."""


def is_tinker_checkpoint(model: str) -> bool:
    """A Tinker sampler checkpoint: ``tinker://…``, or ``BASE;tinker://…`` (another context)."""
    return model.startswith("tinker://") or ";tinker://" in model


_FAMILIES = {**_TABLE, TINKER_FAMILY: _TINKER}


@dataclass(frozen=True)
class SourcedCapabilities:
    """What labmgr assumes for one model: its family and the lab's override pattern, if any."""

    model: str
    capabilities: ModelCapabilities
    family: str | None
    override: str | None = None

    @property
    def source(self) -> str:
        if self.family == TINKER_FAMILY:
            table = "built-in table (Tinker's OpenAI-compatible endpoint, as of 2026-11)"
        elif self.family is not None:
            table = f"built-in table ({self.family}, as of {CAPABILITY_TABLE_DATE})"
        else:
            table = "built-in default for chat models (not in the table)"
        if self.override is None:
            return table
        return f'config [models."{self.override}"] over the {table}'


def family_of(model: str) -> str | None:
    """The longest family `model` equals or extends with ``-`` (a fine-tune: its base's; a
    provider prefix such as ``openai/`` ignored), ``Tinker`` for Tinker's models, or None."""
    tinker = (fnmatch.fnmatchcase(model, pattern) for pattern in TINKER_MODEL_PATTERNS)
    if is_tinker_checkpoint(model) or any(tinker):
        return TINKER_FAMILY
    name = base_of(model).rsplit("/", 1)[-1]  # a provider prefix: openai/gpt-5
    matching = [family for family in _TABLE if name == family or name.startswith(family + "-")]
    return max(matching, key=len, default=None)


def capabilities_for(
    model: str, overrides: Mapping[str, CapabilityOverride] | None = None
) -> SourcedCapabilities:
    """What `model` accepts: its family's entry (or the chat defaults) with the lab's first
    matching override applied (exact id, then globs in order, then the same for its base)."""
    family = family_of(model)
    capabilities = _FAMILIES[family] if family is not None else _CHAT
    overrides = overrides or {}
    found = first_match(model, overrides) or first_match(base_of(model), overrides)
    if found is None:
        return SourcedCapabilities(model, capabilities, family)
    pattern, override = found
    try:
        applied = override.applied_to(capabilities)
    except ValidationError:  # the only check left: a default effort the model does not accept
        efforts = ", ".join(override.reasoning_efforts or capabilities.reasoning_efforts)
        raise ConfigError(
            f'[models."{pattern}"] in the lab\'s config: default_reasoning_effort '
            f"{override.default_reasoning_effort!r} is not one of {model}'s reasoning_efforts "
            f"({efforts})",
            hint="Choose one of those efforts, or set reasoning_efforts in the same table.",
        ) from None
    return SourcedCapabilities(model, applied, family, pattern)


def capability_table(
    overrides: Mapping[str, CapabilityOverride] | None = None,
) -> list[SourcedCapabilities]:
    """One row per family (with the lab's overrides), then one per override pattern."""
    rows = [capabilities_for(family, overrides) for family in _TABLE]
    rows.append(capabilities_for("tinker://…", overrides))
    rows += [
        capabilities_for(pattern, {pattern: override})
        for pattern, override in (overrides or {}).items()
    ]
    return rows
