"""One job to create, checked (`JobRequest`); the API metadata it carries so the database can be
rebuilt from the API alone; the suffix rules (one suffix, one training set)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jobs_db import Database, FinetuneJob, get_file, jobs_with_suffix
from labmgr.accounts import Credential
from labmgr.errors import LabmgrError, SuffixConflict
from labmgr.finetuning.methods import Hyperparameter, method_object

MARKER = "labmgr"
MD5 = "labmgr_md5"
VALIDATION_MD5 = "labmgr_validation_md5"
FILE_NAME = "labmgr_file"
BASE = "labmgr_base"
REQUEST = "labmgr_request"
TAG_PREFIX = "tag."
MAX_METADATA_PAIRS = 16
_MAX_VALUE = 512
_MAX_KEY = 64


@dataclass(frozen=True)
class TrainingData:
    """A validated training (or validation) file: where it is, its md5, examples and tokens."""

    path: Path
    md5: str
    n_examples: int
    n_tokens: int


@dataclass(frozen=True)
class JobRequest:
    """Everything one ``jobs.create`` needs except the uploaded file ids."""

    training: TrainingData
    base_model: str
    suffix: str
    method: str
    hyperparameters: dict[str, Hyperparameter]
    seed: int | None = None
    validation: TrainingData | None = None
    grader: dict[str, Any] | None = None
    integrations: list[dict[str, Any]] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)
    request_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def metadata(self) -> dict[str, str]:
        """The job's API metadata; raises `LabmgrError` when the tags do not fit."""
        metadata = {
            MARKER: "1",
            MD5: self.training.md5,
            FILE_NAME: self.training.path.name[-_MAX_VALUE:],
            BASE: self.base_model,
            REQUEST: self.request_id,
        }
        if self.validation:
            metadata[VALIDATION_MD5] = self.validation.md5
        room = MAX_METADATA_PAIRS - len(metadata)
        if len(self.tags) > room:
            raise LabmgrError(
                f"{len(self.tags)} tags do not fit in the job's API metadata (at most {room}).",
                hint="Use fewer --tag options (the database can hold more: add them later).",
            )
        for key, value in self.tags.items():
            name = TAG_PREFIX + key
            if len(name) > _MAX_KEY or len(value) > _MAX_VALUE:
                raise LabmgrError(
                    f"Tag {key}={value[:40]!r} is too long for the API's metadata (key up to "
                    f"{_MAX_KEY - len(TAG_PREFIX)} characters, value up to {_MAX_VALUE}).",
                    hint="Shorten the tag.",
                )
            metadata[name] = value
        return metadata

    def body(self, files: Mapping[str, str]) -> dict[str, Any]:
        """The ``jobs.create`` body, the uploaded files' ids from ``{md5: file id}`` (never
        holds a key)."""
        body: dict[str, Any] = {
            "model": self.base_model,
            "training_file": files[self.training.md5],
            "suffix": self.suffix,
            "method": method_object(self.method, self.hyperparameters, self.grader),
            "metadata": self.metadata(),
        }
        if self.validation:
            body["validation_file"] = files[self.validation.md5]
        if self.seed is not None:
            body["seed"] = self.seed
        if self.integrations:
            body["integrations"] = [dict(item) for item in self.integrations]
        return body

    def recorded(self, credential: Credential) -> dict[str, Any]:
        """The job fields the API does not return: what was asked, and with which key."""
        return {
            "key_env": credential.key_env,
            "endpoint": credential.base_url,
            "project_id": credential.project,
            "base_model": self.base_model,
            "suffix": self.suffix,
            "method": self.method,
            "hyperparameters_requested": dict(self.hyperparameters),
            "seed_requested": self.seed,
        }

    def dry_run_job(self, credential: Credential, index: int) -> FinetuneJob:
        """The job as a dry run shows it (status ``dry-run``, never recorded)."""
        return FinetuneJob(
            id=f"dry-run-{index + 1}",
            status="dry-run",
            api_metadata=self.metadata(),
            **self.recorded(credential),
        )


def is_labmgr_job(metadata: Mapping[str, str] | None) -> bool:
    return (metadata or {}).get(MARKER) == "1"


def tags_from_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    return {
        key[len(TAG_PREFIX) :]: value
        for key, value in (metadata or {}).items()
        if key.startswith(TAG_PREFIX) and len(key) > len(TAG_PREFIX)
    }


def wandb_integration(
    project: str | None,
    *,
    entity: str | None = None,
    name: str | None = None,
    tags: Sequence[str] | Mapping[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """The ``integrations`` list for Weights & Biases (empty without a project)."""
    options = {"entity": entity, "name": name, "tags": tags}
    if project is None:
        given = next((f"--wandb-{option}" for option, value in options.items() if value), None)
        if given:
            raise LabmgrError(
                f"{given.replace('tags', 'tag')} needs --wandb-project: Weights & Biases runs "
                "belong to a project.",
                hint="Add --wandb-project NAME, or leave the W&B options out.",
            )
        return []
    if not project.strip():
        raise LabmgrError("--wandb-project is empty.", hint="Name the W&B project.")
    if tags and (isinstance(tags, Mapping) or not all(isinstance(t, str) and t for t in tags)):
        raise LabmgrError("W&B tags must be non-empty strings (repeat --wandb-tag for each).")
    settings = {"project": project, **{key: value for key, value in options.items() if value}}
    if tags:
        settings["tags"] = list(tags)
    return [{"type": "wandb", "wandb": settings}]


MAX_SUFFIX = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_suffix(path: Path) -> str:
    """The file name without extension, ``_`` and other unsafe characters as ``-``."""
    return _UNSAFE.sub("-", path.stem.replace("_", "-")).strip("-")[:MAX_SUFFIX] or "ft"


def check_suffix(suffix: str) -> None:
    """Raise when the API would refuse `suffix`."""
    if not suffix or len(suffix) > MAX_SUFFIX or ":" in suffix:
        raise SuffixConflict(
            f"Suffix {suffix!r} is not usable: it must be 1 to {MAX_SUFFIX} characters "
            "without ':'.",
            hint="Pass a shorter --suffix.",
        )


def refuse_other_content(db: Database, suffix: str, md5: str, path: Path) -> None:
    """Raise `SuffixConflict` if a live job with `suffix` trained on other content (failed and
    cancelled jobs never made a model; jobs of unknown content are not compared)."""
    for job in jobs_with_suffix(db, suffix):
        if job.status in ("failed", "cancelled"):
            continue
        used = (job.api_metadata or {}).get(MD5)
        if used is None and job.training_file_id:
            file = get_file(db, job.training_file_id)
            used = file.md5 if file else None
        if used is not None and used != md5:
            raise SuffixConflict(
                f"Suffix {suffix!r} is already used by job {job.id} ({job.status}), trained "
                f"on other content than {path} (md5 {used[:8]}… vs {md5[:8]}…).",
                hint="Choose another --suffix, or restore the file the suffix was trained on.",
            )
