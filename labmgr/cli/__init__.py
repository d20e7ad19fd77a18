"""The `labmgr` command line: a thin typer shell over the library."""

from labmgr.cli.app import app, main

__all__ = ["app", "main"]
