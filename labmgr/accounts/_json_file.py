"""A small JSON file in a lab folder shared by processes: read leniently (missing, unreadable
or damaged reads as empty, so the caller looks things up again), updated atomically (temp file
and rename) under a file lock."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from filelock import FileLock
from pydantic import BaseModel, ValidationError

__all__ = ["LockedJsonFile"]

Content = TypeVar("Content", bound=BaseModel)


class LockedJsonFile(Generic[Content]):
    """`path` holding one `schema` document."""

    def __init__(self, path: Path, schema: type[Content]) -> None:
        self.path = path
        self.schema = schema

    def read(self) -> Content:
        """The document, or an empty one when the file is missing, unreadable or damaged."""
        try:
            return self.schema.model_validate_json(self.path.read_bytes())
        except (OSError, ValidationError, ValueError):
            return self.schema()

    def update(self, change: Callable[[Content], None]) -> None:
        """Read, `change` and write the document back in one step under the file's lock
        (`OSError` when the folder cannot be written)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with FileLock(str(self.path) + ".lock"):
            data = self.read()
            change(data)
            payload = json.dumps(data.model_dump(mode="json"), indent=2, sort_keys=True)
            handle, tmp = tempfile.mkstemp(
                dir=self.path.parent, prefix=f".{self.path.stem}-", text=True
            )
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(payload + "\n")
                os.replace(tmp, self.path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
