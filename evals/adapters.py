"""Per-model request hooks (llmcomp's `ModelAdapter.register`): `Adapter("gpt-5*", hook)` or
`adapters.register(...)`; a hook gets the parameters and model id and returns what to send."""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evals.errors import RunOptionsError

__all__ = [
    "Adapter",
    "Hook",
    "Selector",
    "apply_adapters",
    "as_adapters",
    "clear",
    "register",
    "registered",
    "unregister",
]

Selector = str | Callable[[str], bool]
"""Which models a hook applies to: a glob over model ids (``"gpt-5*"``) or a predicate."""
Hook = Callable[[dict[str, Any], str], Mapping[str, Any]]
"""`hook(params, model) -> params to send` (llmcomp's `prepare(params, model)`)."""

_RESERVED = frozenset({"model", "messages", "n", "stream"})
"""Request fields a hook may not set: the runner owns them."""


@dataclass(frozen=True)
class Adapter:
    """A hook and the models it applies to."""

    selector: Selector
    hook: Hook

    def matches(self, model: str) -> bool:
        """Whether this hook applies to `model`."""
        if isinstance(self.selector, str):
            return fnmatch.fnmatchcase(model, self.selector)
        return bool(self.selector(model))

    @property
    def name(self) -> str:
        """The hook in words, for messages: its function and its pattern."""
        function = getattr(self.hook, "__qualname__", None) or repr(self.hook)
        pattern = self.selector if isinstance(self.selector, str) else "a predicate"
        return f"{function} (for {pattern})"


_registered: list[Adapter] = []


def register(selector: Selector, hook: Hook) -> Adapter:
    """Apply `hook` to models `selector` matches in every context made from now on without
    `adapters=`; returns the `Adapter` (for `unregister`)."""
    adapter = Adapter(selector, hook)
    _registered.append(adapter)
    return adapter


def unregister(adapter: Adapter) -> None:
    """Stop applying a registered hook (nothing happens if it is not registered)."""
    if adapter in _registered:
        _registered.remove(adapter)


def clear() -> None:
    """Unregister every hook."""
    _registered.clear()


def registered() -> tuple[Adapter, ...]:
    """The registered hooks, in registration order."""
    return tuple(_registered)


def as_adapters(value: Iterable[Adapter | tuple[Selector, Hook]] | None) -> tuple[Adapter, ...]:
    """`adapters=` as given to a run: None means the registered hooks (as they are now)."""
    if value is None:
        return registered()
    adapters = []
    for item in value:
        if isinstance(item, Adapter):
            adapters.append(item)
        elif isinstance(item, tuple) and len(item) == 2 and callable(item[1]):
            adapters.append(Adapter(item[0], item[1]))
        else:
            raise RunOptionsError(
                f"adapters= holds {item!r}, which is not an Adapter or a (pattern, hook) pair",
                hint="Pass e.g. adapters=[evals.adapters.Adapter('gpt-5*', hook)].",
            )
    return tuple(adapters)


def apply_adapters(
    adapters: Iterable[Adapter], params: dict[str, Any], model: str
) -> dict[str, Any]:
    """`params` after every hook that matches `model`, in order (`params` is not changed)."""
    result = params
    for adapter in adapters:
        if not adapter.matches(model):
            continue
        returned = adapter.hook(dict(result), model)
        if not isinstance(returned, Mapping):
            raise RunOptionsError(
                f"the request hook {adapter.name} returned {type(returned).__name__} for "
                f"{model}, not the parameters to send",
                hint="A hook returns the parameters, e.g. `return {**params, 'seed': 1}`.",
            )
        reserved = sorted(_RESERVED & set(returned))
        if reserved:
            raise RunOptionsError(
                f"the request hook {adapter.name} sets {', '.join(reserved)} for {model}, "
                "which the runner sets itself",
                hint="A hook changes request parameters only (not the model, messages or n).",
            )
        try:
            json.dumps(dict(returned), sort_keys=True)
        except (TypeError, ValueError) as error:
            raise RunOptionsError(
                f"the request hook {adapter.name} returned parameters for {model} that are "
                f"not JSON ({error})",
                hint="Return plain values: numbers, strings, booleans, lists and dicts.",
            ) from None
        result = dict(returned)
    return result
