"""Which endpoint serves which models, in the order a lab's router decides (for `labmgr keys`
and `labmgr info`; the router itself is `evals.runner.LabRouter`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from labmgr.accounts._discovery import discover_credentials
from labmgr.accounts._shared_models import SharedModels
from labmgr.settings import Settings

__all__ = ["RoutingRule", "routing_rules"]


@dataclass(frozen=True)
class RoutingRule:
    """One step of routing: which models, and what serves them."""

    models: str
    """The models this step takes, in words or as patterns."""
    served_by: str
    """The endpoint and key (by env var name) that serve them."""


def routing_rules(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> list[RoutingRule]:
    """The router's steps for this lab, first match first: endpoints claiming models by
    pattern (in file order), fine-tunes of the jobs database, fine-tunes found on a key
    (remembered in the lab), then everything else on the default key."""
    env = os.environ if environ is None else environ
    rules = []
    for name, endpoint in settings.endpoints.items():
        if endpoint.models:
            key = endpoint.key_env + ("" if env.get(endpoint.key_env, "").strip() else ", unset")
            rules.append(RoutingRule(", ".join(endpoint.models), f"endpoint {name} ({key})"))
    rules.append(
        RoutingRule("fine-tunes in the jobs database", "a key of the project that owns the job")
    )
    shared = SharedModels(settings.shared_models_path).all()
    rules.extend(
        RoutingRule(model, f"endpoint {entry.endpoint} ({entry.key_env}), found and remembered")
        for model, entry in sorted(shared.items())
    )
    rules.append(RoutingRule("other fine-tunes", "the first key that can see them (remembered)"))
    default = next(
        (c for c in discover_credentials(settings, environ) if c.endpoint == "openai"), None
    )
    rules.append(
        RoutingRule(
            "everything else",
            f"endpoint openai ({default.key_env})" if default else "OPENAI_API_KEY (unset)",
        )
    )
    return rules
