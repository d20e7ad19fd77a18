"""Routing with a lab's keys, first match wins:

1. a configured endpoint whose `models` patterns match (`[endpoints.NAME] models = […]`, in
   file order): answer and judge models alike;
2. a fine-tuned model in the lab's jobs database: a key of the organization/project that owns
   its job;
3. a fine-tuned model the database does not know (shared by another organization): the key
   that can see it, found by asking each key once and remembered in the lab
   (`shared_models.json`: env var names and key fingerprints, never a key);
4. anything else: the lab's default OpenAI key.

The lab is always given (`LabRouter.from_lab(settings)`): nothing here looks for one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from typing import TYPE_CHECKING

from evals.errors import NoEndpointError
from evals.runner._routing import Endpoint

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.accounts import Accounts, Credential
    from labmgr.settings import Settings

__all__ = ["LabRouter"]


class LabRouter:
    """Models matching a configured endpoint's patterns go there; a fine-tuned model goes to
    a key of the organization/project that owns it (from the jobs database), or else to the
    key found to see it; everything else to the lab's default OpenAI key.

    One Endpoint per credential, so models on the same key share one client; each model is
    routed once per router.
    """

    def __init__(
        self,
        accounts: Accounts,
        owners: Mapping[str, FinetuneJob] | None = None,
        *,
        supports_n: bool = True,
    ) -> None:
        self.accounts = accounts
        self.owners = dict(owners or {})
        """The job that produced each fine-tuned model (final models and checkpoints)."""
        self.supports_n = supports_n
        self._endpoints: dict[str, Endpoint] = {}
        self._routes: dict[str, Endpoint] = {}
        self._credentials: list[Credential] | None = None

    @classmethod
    def from_lab(cls, settings: Settings) -> LabRouter:
        """A router from the keys in the environment and the lab's database (owners are read
        once)."""
        from labmgr.accounts import Accounts

        return cls(Accounts(settings), _owners_from_database(settings.db_url))

    def pattern_endpoint(self, model: str) -> str | None:
        """The first configured endpoint (in file order) whose `models` patterns match."""
        for name, endpoint in self.accounts.settings.endpoints.items():
            if any(fnmatch.fnmatchcase(model, pattern) for pattern in endpoint.models):
                return name
        return None

    def _credential(self, model: str) -> Credential:
        """A configured endpoint claiming the model; else the key that created the model's
        job, or a key of its project (the job manager's own choice,
        `labmgr.finetuning.routing`); else, for a fine-tune the database does not know, the
        key found to see it; else the default key."""
        from labmgr.errors import NoKeyForOrganization
        from labmgr.finetuning.routing import candidate_credentials, resolved_credentials

        claimed_by = self.pattern_endpoint(model)
        if claimed_by is not None:
            return self.accounts.default(claimed_by)
        job = self.owners.get(model)
        if job is None:
            if model.startswith("ft:"):
                found = self.accounts.key_for_model(model)
                if found is not None:
                    return found
            return self.accounts.default()
        if self._credentials is None:
            self._credentials, _ = resolved_credentials(self.accounts)
        candidates = candidate_credentials(job, self._credentials)
        if not candidates:
            owner = job.project_id or job.organization_id or "an unknown project"
            raise NoKeyForOrganization(
                f"none of the {len(self._credentials)} usable API keys belongs to {owner}, "
                f"which owns job {job.id}.",
                hint="Set an OPENAI_API_KEY_<NAME> holding a key of that project; "
                "`labmgr keys` shows the organization and project of each key.",
            )
        return candidates[0]

    def endpoint_for(self, model: str) -> Endpoint:
        from labmgr.errors import LabmgrError

        known = self._routes.get(model)
        if known is not None:
            return known
        try:
            credential = self._credential(model)
        except LabmgrError as error:
            raise NoEndpointError(f"no key for {model}: {error.message}", hint=error.hint) from None
        identity = f"{credential.base_url}|{credential.key_env}"
        endpoint = self._endpoints.get(identity)
        if endpoint is None:
            configured = self.accounts.settings.endpoints.get(credential.endpoint)
            # `n` is on for OpenAI's chat API; other OpenAI-compatible servers vary, so a
            # configured endpoint says (`n = true`), and OpenRouter goes without.
            serves_n = credential.endpoint == "openai" or (configured is not None and configured.n)
            endpoint = self._endpoints[identity] = Endpoint(
                base_url=credential.base_url,
                key_name=credential.key_env,
                api_key=credential.api_key,
                supports_n=self.supports_n and serves_n,
            )
        self._routes[model] = endpoint
        return endpoint


def _owners_from_database(db_url: str) -> dict[str, FinetuneJob]:
    """Each fine-tuned model's job, from the lab's database; none when the database does not
    exist yet or cannot be read (then every model goes to the default key)."""
    from jobs_db import DatabaseError, list_jobs, open_database, select_models

    if _missing_sqlite_file(db_url):
        return {}  # no jobs yet: opening it would create an empty file in the lab
    try:
        with open_database(db_url, upgrade=False) as database:
            jobs = {job.id: job for job in list_jobs(database)}
            models = select_models(database, checkpoints=True)
    except DatabaseError:
        return {}
    return {m.name: jobs[m.job_id] for m in models if m.job_id in jobs}


def _missing_sqlite_file(db_url: str) -> bool:
    from pathlib import Path

    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(db_url)
    except (ArgumentError, ValueError):
        return False
    database = url.database or ""
    return (
        url.get_backend_name() == "sqlite"
        and database not in ("", ":memory:")
        and not (Path(database).exists())
    )
