"""Using the lab (labmgr core) from evals: its keys route models, its prices cost them, its
`[eval]` section sets run defaults, its database knows who owns each fine-tuned model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from evals.routing import Endpoint, EnvRouter, NoEndpointError

if TYPE_CHECKING:
    from evals.routing import ClientRouter
    from evals.settings import RunSettings
    from jobs_db import FinetuneJob
    from labmgr.accounts import Accounts, Credential
    from labmgr.settings import Settings

__all__ = ["LabRouter", "default_router", "lab_price", "lab_run_settings", "lab_settings"]


def lab_settings() -> Settings | None:
    """The current lab's settings, or None when there is no usable lab."""
    try:
        from labmgr.settings import load_settings

        return load_settings()
    except Exception:  # no lab, or a broken config: evals still run with explicit settings
        return None


class LabRouter:
    """Base models go to the lab's default OpenAI key; a fine-tuned model goes to a key of
    the organization/project that owns it (from the jobs database).

    One Endpoint per credential, so models on the same key share one client.
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
        self._credentials: list[Credential] | None = None

    @classmethod
    def from_lab(cls, settings: Settings | None = None) -> LabRouter:
        """A router from the lab's keys and database (owners are read once)."""
        from labmgr.accounts import Accounts

        settings = settings or lab_settings()
        if settings is None:
            raise NoEndpointError("no lab found: run `labmgr init` or pass a router")
        return cls(Accounts(settings), _owners_from_database(settings.db_url))

    def _credential(self, model: str) -> Credential:
        """The key that created the model's job, else a key of its project (the job
        manager's own choice, `labmgr.finetuning.routing`); base models use the default key."""
        from labmgr.errors import NoKeyForOrganization
        from labmgr.finetuning.routing import candidate_credentials, resolved_credentials

        job = self.owners.get(model)
        if job is None:
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

        try:
            credential = self._credential(model)
        except LabmgrError as error:
            hint = getattr(error, "hint", None)
            raise NoEndpointError(
                f"no key for {model}: {error.message}" + (f" {hint}" if hint else "")
            ) from None
        identity = f"{credential.base_url}|{credential.key_env}"
        endpoint = self._endpoints.get(identity)
        if endpoint is None:
            endpoint = self._endpoints[identity] = Endpoint(
                base_url=credential.base_url,
                key_name=credential.key_env,
                api_key=credential.api_key,
                # `n` is on for OpenAI's chat API; other OpenAI-compatible servers vary.
                supports_n=self.supports_n and credential.endpoint == "openai",
            )
        return endpoint


def _owners_from_database(db_url: str) -> dict[str, FinetuneJob]:
    try:
        from jobs_db import list_jobs, open_database, select_models

        database = open_database(db_url, upgrade=False)
        jobs = {job.id: job for job in list_jobs(database)}
        models = select_models(database, checkpoints=True)
    except Exception:  # no database yet, or an older schema: route by the default key
        return {}
    return {m.name: jobs[m.job_id] for m in models if m.job_id in jobs}


def default_router() -> ClientRouter:
    """The lab's router when a lab is present, else `EnvRouter` (OPENAI_API_KEY/BASE_URL)."""
    settings = lab_settings()
    if settings is None:
        return EnvRouter()
    try:
        return LabRouter.from_lab(settings)
    except Exception:
        return EnvRouter()


def lab_price() -> Any:
    """`labmgr.pricing.cost` with the lab's price overrides, or None without labmgr."""
    try:
        from labmgr.pricing import cost
    except ImportError:
        return None
    settings = lab_settings()
    overrides = getattr(settings, "prices", None) or None

    def price(model: str, prompt_tokens: float, completion_tokens: float) -> float | None:
        return cost(model, prompt_tokens, completion_tokens, overrides=overrides)  # type: ignore[arg-type]

    return price


def lab_run_settings() -> RunSettings:
    """RunSettings with the lab's `[eval]` defaults (concurrency, timeout, retries)."""
    from evals.settings import RunSettings

    settings = lab_settings()
    defaults = getattr(settings, "eval", None)
    if defaults is None:
        return RunSettings()
    return RunSettings(
        max_concurrency=defaults.max_concurrency,
        request_timeout=defaults.request_timeout,
        max_attempts=defaults.max_retries + 1,
    )
