"""Shared pytest configuration; fixtures live in tests/fixtures/, one module per area."""

from __future__ import annotations

import os

# Loopback traffic must never be routed through a proxy from the environment.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"

pytest_plugins = [
    "fixtures.sandbox",
    "fixtures.database",
    "fixtures.lab",
    "fixtures.evals",
]
