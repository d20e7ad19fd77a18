"""Which endpoint and key serve a model, for the runner and the job manager alike
(`LabRouter`, `candidate_credentials`). Light to import: accounts, database and SDK load on
first use."""

from labmgr.routing._endpoint import ClientRouter, Endpoint, EnvRouter, NoEndpointError
from labmgr.routing._lab_router import (
    LabRouter,
    candidate_credentials,
    resolved_credentials,
    routing_rules,
)

__all__ = [
    "ClientRouter",
    "Endpoint",
    "EnvRouter",
    "LabRouter",
    "NoEndpointError",
    "candidate_credentials",
    "resolved_credentials",
    "routing_rules",
]
