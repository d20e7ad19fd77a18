"""Which organization and project an API key belongs to (the accounts file format is in
`labmgr sandbox serve --help`; without one, every key is the default account)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, Field, field_validator

from labmgr.sandbox.errors import STRICT, APIError, SandboxError, read


@dataclass(frozen=True)
class Account:
    """An organization + project pair; objects are visible only within one."""

    organization: str
    slug: str
    project: str

    @property
    def scope(self) -> str:
        return f"{self.organization}/{self.project}"


DEFAULT_ACCOUNT = Account(organization="org-sandbox", slug="sandbox", project="proj_default")


class AccountsFileError(SandboxError, ValueError):
    """An accounts file that cannot be used (the message names the file and the entry)."""


class AccountBook:
    """Maps API keys to accounts; `open=True` accepts every key as the default account."""

    def __init__(self, accounts: dict[str, Account] | None = None) -> None:
        self._accounts = dict(accounts or {})
        self.open = accounts is None

    @classmethod
    def from_file(cls, path: str | Path) -> AccountBook:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise AccountsFileError(f"cannot read accounts file {path}: {exc.strerror}") from exc
        try:
            data: Any = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
        except (ValueError, yaml.YAMLError) as exc:
            raise AccountsFileError(f"accounts file {path} is not valid YAML/JSON: {exc}") from exc
        entries = data.get("accounts") if isinstance(data, dict) else None
        if not isinstance(entries, list) or not entries:
            raise AccountsFileError(
                f"accounts file {path} must have a non-empty list under `accounts:` "
                "(entries with key, organization, slug and optional project)"
            )
        accounts: dict[str, Account] = {}
        for number, raw in enumerate(entries, 1):
            where = f"accounts file {path}, entry {number}"
            entry = read(_Entry, raw, where, AccountsFileError)
            if entry.key in accounts:
                raise AccountsFileError(f"{where}: this key is already listed in an earlier entry")
            accounts[entry.key] = Account(entry.organization, entry.slug, entry.project)
        return cls(accounts)

    def authenticate(self, authorization: str | None) -> Account:
        """The account of an `Authorization: Bearer …` header, or a 401 the real API would send."""
        if not authorization or not authorization.startswith("Bearer ") or not authorization[7:]:
            raise APIError(
                401,
                "You didn't provide an API key. You need to provide your API key in an "
                "Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
            )
        key = authorization[7:].strip()
        if self.open:
            return DEFAULT_ACCOUNT
        account = self._accounts.get(key)
        if account is None:
            shown = f"{key[:3]}***{key[-4:]}" if len(key) >= 12 else "***"  # never the whole key
            message = (
                f"Incorrect API key provided: {shown}. You can find your API key at "
                "https://platform.openai.com/account/api-keys."
            )
            raise APIError(401, message, code="invalid_api_key")
        return account


Name = Annotated[str, Field(min_length=1)]


class _Entry(BaseModel):
    """One entry of an accounts file."""

    model_config = STRICT

    key: Name
    organization: Name
    slug: Name
    project: Name = "proj_default"

    @field_validator("slug")
    @classmethod
    def _no_colon(cls, slug: str) -> str:
        if ":" in slug:
            raise ValueError("may not contain ':' (it is part of model ids)")
        return slug
