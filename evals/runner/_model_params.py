"""Request parameters per model, in three steps: the model's capabilities (the budget spelled
as it wants, a parameter it would refuse stops the question, naming the way out), adapting
(`adapt: true` leaves such a parameter out or lowers it instead), then the request hooks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evals.adapters import Adapter, apply_adapters
from evals.errors import UnsupportedRequestError

if TYPE_CHECKING:
    from labmgr.capabilities import CapabilityOverride, ModelCapabilities


@dataclass(frozen=True)
class RequestOptions:
    """How a run turns a question's parameters into each model's request."""

    overrides: Mapping[str, CapabilityOverride] = field(default_factory=dict)
    """The lab's `[models]` capability overrides."""
    adapt: bool = False
    """Adapt questions that do not say (`adapt: null`) instead of refusing them."""
    reasoning_effort: str | None = None
    """The effort sent to reasoning models when a question names none."""
    adapters: tuple[Adapter, ...] = ()
    _known: dict[str, ModelCapabilities] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def capabilities(self, model: str) -> ModelCapabilities:
        """What `model` accepts (with the lab's overrides), looked up once."""
        found = self._known.get(model)
        if found is None:
            from labmgr.capabilities import capabilities_for

            found = self._known[model] = capabilities_for(model, self.overrides).capabilities
        return found

    def prepare(
        self,
        model: str,
        params: Mapping[str, Any],
        *,
        label: str,
        adapt: bool | None = None,
    ) -> dict[str, Any]:
        """The parameters sent to `model` for a question asking with `params` (`label` names
        it in messages; `adapt`: the question's, None for the run's). Raises
        `UnsupportedRequestError`."""
        sent = _with_capabilities(
            model,
            dict(params),
            self.capabilities(model),
            adapt=self.adapt if adapt is None else adapt,
            default_effort=self.reasoning_effort,
            label=label,
        )
        return apply_adapters(self.adapters, sent, model) if self.adapters else sent

    def prepare_models(
        self,
        models: Iterable[str],
        params: Mapping[str, Any],
        *,
        label: str,
        adapt: bool | None = None,
    ) -> dict[str, dict[str, Any]]:
        """`prepare` for each model; one error names the first that refuses and lists the rest."""
        prepared: dict[str, dict[str, Any]] = {}
        refused: list[tuple[str, UnsupportedRequestError]] = []
        for model in models:
            try:
                prepared[model] = self.prepare(model, params, label=label, adapt=adapt)
            except UnsupportedRequestError as error:
                refused.append((model, error))
        if refused:
            first = refused[0][1]
            if len(refused) == 1:
                raise first
            others = ", ".join(model for model, _ in refused[1:])
            raise UnsupportedRequestError(
                f"{first.message.rstrip('.')} (also: {others}).", first.hint
            )
        return prepared


def is_reasoning_model(model: str, options: RequestOptions | None = None) -> bool:
    """Whether the capability table (with `options`' overrides) calls `model` a reasoning model."""
    return (options or RequestOptions()).capabilities(model).reasoning


def _with_capabilities(
    model: str,
    sent: dict[str, Any],
    capabilities: ModelCapabilities,
    *,
    adapt: bool,
    default_effort: str | None,
    label: str,
) -> dict[str, Any]:
    if sent.get("logprobs") and not capabilities.logprobs:
        raise UnsupportedRequestError(
            f"{label} is read from logprobs, which {model} does not return: ask a model "
            "that returns them (adapting cannot help)."
        )
    wanted = sent.get("top_logprobs")
    if isinstance(wanted, int) and wanted > capabilities.top_logprobs:
        most = capabilities.top_logprobs
        if not adapt:
            raise UnsupportedRequestError(
                f"{label}: {model} returns at most {most} top_logprobs, not {wanted}: set "
                f"`adapt: true` to ask for {most}, or lower top_logprobs."
            )
        sent["top_logprobs"] = most
    effort = sent.pop("reasoning_effort", None) or default_effort
    efforts = capabilities.reasoning_efforts
    if effort is not None and efforts:
        if effort in efforts:
            sent["reasoning_effort"] = effort
        elif not adapt:
            default = capabilities.default_reasoning_effort
            applies = f"the API default, {default}," if default else "the API default"
            raise UnsupportedRequestError(
                f"{label}: {model} does not accept reasoning_effort {effort!r} (it takes "
                f"{', '.join(efforts)}): set `adapt: true` to leave it out ({applies} "
                "applies), or choose one of those."
            )
    if capabilities.token_limit == "max_completion_tokens" and "max_tokens" in sent:
        limit = sent.pop("max_tokens")
        sent.setdefault("max_completion_tokens", limit)
    at_one = "reasoning models sample at 1 only" if capabilities.reasoning else "it samples at 1"
    refused = f"{label}: {model} does not accept"
    temperature = sent.get("temperature")
    if temperature is not None and not capabilities.temperature and temperature != 1:
        what = f"temperature {temperature:g} ({at_one})"
        _drop(sent, "temperature", adapt, f"{refused} {what}", "drop it, or ask a chat model")
    if sent.get("top_p") is not None and not capabilities.top_p:
        _drop(sent, "top_p", adapt, f"{refused} top_p ({at_one})", "drop it, or ask a chat model")
    if sent.get("logit_bias") and not capabilities.logit_bias:
        way_out = "drop it, or ask a model that takes it"
        _drop(sent, "logit_bias", adapt, f"{refused} logit_bias", way_out)
    if sent.get("stop") is not None and not capabilities.stop:
        way_out = "(the answer is still cut at them before it is scored), or ask a chat model"
        _drop(sent, "stop", adapt, f"{refused} stop sequences", f"drop them {way_out}")
    return sent


def _drop(sent: dict[str, Any], key: str, adapt: bool, refusal: str, way_out: str) -> None:
    if not adapt:
        raise UnsupportedRequestError(f"{refusal}: set `adapt: true` to {way_out}.")
    del sent[key]
