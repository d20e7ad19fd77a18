"""Which endpoint and key serve a model, for the runner and the job manager alike.

    from labmgr.routing import EnvRouter, LabRouter
    router = LabRouter.from_lab(settings)           # patterns, owners, shared fine-tunes
    endpoint = router.endpoint_for("ft:gpt-4o-mini:org:tuned:abc")   # or NoEndpointError

`candidate_credentials(job, credentials)` is the key a fine-tuning job is managed with;
`routing_rules(settings)` says the router's steps in words. Importing this is light: the
accounts, the database and the SDK load when a lab router first routes.
"""

from labmgr.routing._endpoint import (
    DEFAULT_BASE_URL,
    ClientRouter,
    Endpoint,
    EnvRouter,
    NoEndpointError,
)
from labmgr.routing._lab_router import LabRouter, candidate_credentials, resolved_credentials
from labmgr.routing._rules import RoutingRule, routing_rules

__all__ = [
    "DEFAULT_BASE_URL",
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "LabRouter",
    "NoEndpointError",
    "RoutingRule",
    "candidate_credentials",
    "resolved_credentials",
    "routing_rules",
]
