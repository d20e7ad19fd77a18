"""Default suffixes and the rule that one suffix means one training set."""

from __future__ import annotations

import re
from pathlib import Path

from jobs_db import Database, get_file, jobs_with_suffix
from labmgr.errors import SuffixConflict
from labmgr.finetuning.jobs.request import MD5

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
    """Raise `SuffixConflict` if a live job with `suffix` trained on other content.

    Failed and cancelled jobs do not hold their suffix (their model never existed). Jobs
    whose training content is unknown (imported without metadata) are not compared.
    """
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
