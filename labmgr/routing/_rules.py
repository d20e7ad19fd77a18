"""The router's steps for a lab in words, first match first (for `labmgr keys` and `labmgr
info`)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from labmgr.settings import Settings


@dataclass(frozen=True)
class RoutingRule:
    """One step of routing: which models, and what serves them."""

    models: str
    """The models this step takes, in words or as patterns."""
    served_by: str
    """The endpoint and key (by env var name) that serve them."""


def routing_rules(settings: Settings) -> list[RoutingRule]:
    """Endpoints claiming models by pattern (in file order), fine-tunes of the jobs database,
    fine-tunes found on a key (remembered in the lab), then everything else."""
    from labmgr.accounts import OPENAI_ENDPOINT, discover_credentials, shared_models

    env = os.environ
    rules = []
    for name, endpoint in settings.endpoints.items():
        if endpoint.models:
            key = endpoint.key_env + ("" if env.get(endpoint.key_env, "").strip() else ", unset")
            rules.append(RoutingRule(", ".join(endpoint.models), f"endpoint {name} ({key})"))
    rules.append(
        RoutingRule("fine-tunes in the jobs database", "a key of the project that owns the job")
    )
    shared = shared_models(settings.shared_models_path).all()
    rules.extend(
        RoutingRule(model, f"endpoint {entry.endpoint} ({entry.key_env}), found and remembered")
        for model, entry in sorted(shared.items())
    )
    rules.append(RoutingRule("other fine-tunes", "the first key that can see them (remembered)"))
    credentials = discover_credentials(settings)
    default = next((c for c in credentials if c.endpoint == OPENAI_ENDPOINT), None)
    served_by = f"endpoint openai ({default.key_env})" if default else "OPENAI_API_KEY (unset)"
    rules.append(RoutingRule("everything else", served_by))
    return rules
