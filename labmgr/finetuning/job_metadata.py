"""What labmgr writes into a job's API ``metadata``, and reading it back (for imports).

The API keeps up to 16 string pairs per job. labmgr uses them so that the database can be
rebuilt from the API alone: the training file's md5 and name, the base model as requested,
a request id (to find a job whose creation response was lost), and the job's tags.
"""

from __future__ import annotations

from collections.abc import Mapping

from labmgr.errors import LabmgrError

__all__ = [
    "MARKER",
    "MAX_METADATA_PAIRS",
    "build_metadata",
    "is_labmgr_job",
    "tags_from_metadata",
]

MARKER = "labmgr"
"""Key present (value ``"1"``) on every job labmgr created."""
MD5 = "labmgr_md5"
VALIDATION_MD5 = "labmgr_validation_md5"
FILE_NAME = "labmgr_file"
BASE = "labmgr_base"
REQUEST = "labmgr_request"
TAG_PREFIX = "tag."
MAX_METADATA_PAIRS = 16
_MAX_VALUE = 512
_MAX_KEY = 64


def build_metadata(
    *,
    md5: str,
    file_name: str,
    base_model: str,
    request_id: str,
    tags: Mapping[str, str],
    validation_md5: str | None = None,
) -> dict[str, str]:
    """The metadata of a new job; raises `LabmgrError` when the tags do not fit."""
    metadata = {
        MARKER: "1",
        MD5: md5,
        FILE_NAME: file_name[-_MAX_VALUE:],
        BASE: base_model,
        REQUEST: request_id,
    }
    if validation_md5:
        metadata[VALIDATION_MD5] = validation_md5
    room = MAX_METADATA_PAIRS - len(metadata)
    if len(tags) > room:
        raise LabmgrError(
            f"{len(tags)} tags do not fit in the job's API metadata (at most {room}).",
            hint="Use fewer --tag options (the database can hold more: add them later).",
        )
    for key, value in tags.items():
        name = TAG_PREFIX + key
        if len(name) > _MAX_KEY or len(value) > _MAX_VALUE:
            raise LabmgrError(
                f"Tag {key}={value[:40]!r} is too long for the API's metadata "
                f"(key up to {_MAX_KEY - len(TAG_PREFIX)} characters, value up to {_MAX_VALUE}).",
                hint="Shorten the tag.",
            )
        metadata[name] = value
    return metadata


def is_labmgr_job(metadata: Mapping[str, str] | None) -> bool:
    """True when the job was created by labmgr."""
    return bool(metadata) and (metadata or {}).get(MARKER) == "1"


def tags_from_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """The job's tags as labmgr stored them in its metadata."""
    return {
        key[len(TAG_PREFIX) :]: value
        for key, value in (metadata or {}).items()
        if key.startswith(TAG_PREFIX) and len(key) > len(TAG_PREFIX)
    }
