"""Shared pytest fixtures."""

from __future__ import annotations

import os

# Loopback traffic must never be routed through a proxy from the environment.
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")
os.environ["no_proxy"] = os.environ["NO_PROXY"]
