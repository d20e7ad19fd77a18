"""Routing with a lab's keys, first match wins:

1. a configured endpoint whose `models` patterns match (`[endpoints.NAME] models = […]`, in
   file order): answer and judge models alike;
2. Tinker's models (`goes_to_tinker`): a ``tinker://`` checkpoint with the Tinker key
   that trained it (its job's key), else the first Tinker key; Tinker's base models
   (``Qwen/*``, … unless the lab configures ``[endpoints.tinker]``) with a Tinker key;
3. a fine-tuned model in the lab's jobs database: a key of the organization/project that owns
   its job (`candidate_credentials`, the job manager's choice too);
4. a fine-tuned model the database does not know (shared by another organization): the key
   that can see it, found by asking each key once and remembered in the lab
   (`shared_models.json`);
5. anything else: the lab's default OpenAI key.

The lab is always given (`LabRouter.from_lab(settings)`): nothing here looks for one.
`routing_rules` says the steps in words (for `labmgr keys` and `labmgr info`).
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from labmgr.capabilities import TINKER_MODEL_PATTERNS
from labmgr.errors import LabmgrError
from labmgr.routing._endpoint import Endpoint, NoEndpointError, goes_to_tinker

if TYPE_CHECKING:
    from jobs_db import FinetuneJob
    from labmgr.accounts import Accounts, Credential
    from labmgr.settings import Settings


def resolved_credentials(accounts: Accounts) -> tuple[list[Credential], dict[str, str]]:
    """Every key with its organization/project (cached lookups), and why others failed."""
    found: list[Credential] = []
    failed: dict[str, str] = {}
    for credential in accounts.credentials:
        try:
            found.append(accounts.resolve(credential))
        except LabmgrError as exc:
            failed[credential.key_env] = exc.message
    return found, failed


def candidate_credentials(job: FinetuneJob, credentials: Sequence[Credential]) -> list[Credential]:
    """Keys that may see `job`, best first: the key that created it, then other keys of its
    project. A key of another project is left out when both projects are known; when the
    job's project is unknown (e.g. imported from llmcomp) every key of its endpoint is tried."""
    from labmgr.accounts import OPENAI_ENDPOINT

    def may_see(credential: Credential) -> bool:
        if job.project_id and credential.project and credential.project != job.project_id:
            return False
        if job.endpoint:
            return credential.base_url == job.endpoint
        return credential.endpoint == OPENAI_ENDPOINT

    usable = [c for c in credentials if may_see(c)]
    return sorted(
        usable,
        key=lambda c: (
            c.key_env != job.key_env,
            not (job.project_id and c.project == job.project_id),
        ),
    )


class LabRouter:
    """Routes each model by the steps above; one Endpoint per credential, so models on the
    same key share one client, and each model is routed once per router."""

    def __init__(self, accounts: Accounts, owners: Mapping[str, FinetuneJob] | None = None):
        from labmgr.accounts import shared_models

        self.accounts = accounts
        self.owners = dict(owners or {})  # the job of each fine-tuned model and checkpoint
        self.shared_models = shared_models(accounts.settings.shared_models_path)
        self._endpoints: dict[str, Endpoint] = {}
        self._routes: dict[str, Endpoint] = {}
        self._credentials: list[Credential] | None = None

    @classmethod
    def from_lab(cls, settings: Settings) -> LabRouter:
        """A router from the keys in the environment and the lab's database (read once)."""
        from labmgr.accounts import Accounts

        return cls(Accounts(settings), _owners_from_database(settings.db_url))

    def key_for_shared_model(self, model: str) -> Credential | None:
        """The key remembered for a fine-tune the database does not know, else the first key
        whose endpoint finds it (`GET /models/{model}`, each key asked once), remembered;
        None when no key can see it. With one key there is nothing to choose."""
        credentials = self.accounts.credentials
        if len(credentials) == 1:
            return credentials[0]
        remembered = self.shared_models.get(model)
        if remembered is not None:  # the fingerprint covers the base URL
            known = (remembered.key_env, remembered.fingerprint)
            for credential in credentials:
                if (credential.key_env, credential.fingerprint()) == known:
                    return credential
        import openai  # only when a model's key is looked up over the network

        from labmgr.accounts import SharedModel

        for credential in credentials:
            try:
                self.accounts.pool.client(credential).models.retrieve(model)
            except (openai.APIStatusError, openai.APIConnectionError, LabmgrError):
                continue
            found = SharedModel(
                endpoint=credential.endpoint,
                base_url=credential.base_url,
                key_env=credential.key_env,
                fingerprint=credential.fingerprint(),
            )
            self.shared_models.put(model, found)
            return credential
        return None

    def _credential(self, model: str) -> Credential:
        for name, endpoint in self.accounts.settings.endpoints.items():  # in file order
            if any(fnmatch.fnmatchcase(model, pattern) for pattern in endpoint.models):
                return self.accounts.default(name)
        if self._is_tinker(model):
            return self._tinker_credential(model)
        job = self.owners.get(model)
        if job is None:
            found = self.key_for_shared_model(model) if model.startswith("ft:") else None
            return found or self.accounts.default()
        if self._credentials is None:
            self._credentials, _ = resolved_credentials(self.accounts)
        candidates = candidate_credentials(job, self._credentials)
        if not candidates:
            owner = job.project_id or job.organization_id or "an unknown project"
            raise NoEndpointError(
                f"no key for {model}: none of the {len(self._credentials)} usable API keys "
                f"belongs to {owner}, which owns job {job.id}.",
                hint="Set an OPENAI_API_KEY_<NAME> holding a key of that project; "
                "`labmgr keys` shows the organization and project of each key.",
            )
        return candidates[0]

    def _is_tinker(self, model: str) -> bool:
        from labmgr.accounts import TINKER_ENDPOINT, openai_base_url

        configured = TINKER_ENDPOINT in self.accounts.settings.endpoints
        return goes_to_tinker(
            model,
            () if configured else TINKER_MODEL_PATTERNS,
            has_key=lambda: any(c.endpoint == TINKER_ENDPOINT for c in self.accounts.credentials),
            fallback_url=openai_base_url,
        )

    def _tinker_credential(self, model: str) -> Credential:
        """The Tinker key of the job that made `model`, else the first Tinker key."""
        from labmgr.accounts import TINKER_ENDPOINT

        job = self.owners.get(model)
        trained_with = job.key_env if job is not None else None
        for credential in self.accounts.credentials:
            if credential.endpoint == TINKER_ENDPOINT and credential.key_env == trained_with:
                return credential
        return self.accounts.default(TINKER_ENDPOINT)  # raises naming TINKER_API_KEY

    def endpoint_for(self, model: str) -> Endpoint:
        known = self._routes.get(model)
        if known is not None:
            return known
        try:
            credential = self._credential(model)
        except LabmgrError as error:
            raise NoEndpointError(f"no key for {model}: {error.message}", hint=error.hint) from None
        from labmgr.accounts import TINKER_ENDPOINT

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
                supports_n=serves_n,
                lists_models=credential.endpoint != TINKER_ENDPOINT,
            )
        self._routes[model] = endpoint
        return endpoint


def _owners_from_database(db_url: str) -> dict[str, FinetuneJob]:
    """Each fine-tuned model's job; none when the database cannot be read or does not exist
    yet (opening a missing SQLite file would create an empty one in the lab)."""
    from jobs_db import DatabaseError, database_file, list_jobs, open_database, select_models

    try:
        path = database_file(db_url)
        if path is not None and not path.exists():
            return {}
        with open_database(db_url, upgrade=False) as database:
            jobs = {job.id: job for job in list_jobs(database)}
            models = select_models(database, checkpoints=True)
    except DatabaseError:
        return {}
    return {m.name: jobs[m.job_id] for m in models if m.job_id in jobs}


@dataclass(frozen=True)
class RoutingRule:
    """One step of routing: which models (in words or as patterns), and what serves them."""

    models: str
    served_by: str


def routing_rules(settings: Settings) -> list[RoutingRule]:
    """The steps above for this lab, first match first."""
    from labmgr.accounts import (
        OPENAI_ENDPOINT,
        TINKER_ENDPOINT,
        discover_credentials,
        shared_models,
        tinker_key_envs,
    )

    rules = []
    for name, endpoint in settings.endpoints.items():
        if endpoint.models:
            unset = "" if os.environ.get(endpoint.key_env, "").strip() else ", unset"
            served_by = f"endpoint {name} ({endpoint.key_env}{unset})"
            rules.append(RoutingRule(", ".join(endpoint.models), served_by))
    configured = settings.endpoints.get(TINKER_ENDPOINT)
    tinker_keys = tinker_key_envs()
    if configured is not None:  # without a Tinker key, a tinker:// model is an error naming it
        rules.append(
            RoutingRule("tinker://… checkpoints", f"endpoint tinker ({configured.key_env})")
        )
    elif tinker_keys:
        models = ", ".join(("tinker://…", *TINKER_MODEL_PATTERNS))
        rules.append(RoutingRule(models, f"endpoint tinker ({tinker_keys[0]})"))
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
