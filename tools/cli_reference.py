"""Render the command line's help as one markdown page (`docs/cli.md`).

python -m tools.cli_reference > docs/cli.md      # regenerate
python -m tools.cli_reference --check docs/cli.md  # exit 1 when the file is out of date

The page is built from the command objects typer creates (duck-typed: typer may bundle its own
copy of click), not from terminal help output, so it does not depend on the terminal's width.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

__all__ = ["REGENERATE", "render_reference"]

REGENERATE = "python -m tools.cli_reference > docs/cli.md"
"""The command that rewrites the reference; tests quote it when the page is stale."""

_HEADER = """\
# Command-line reference

<!-- Generated from the typer app by `{regenerate}`; do not edit by hand. -->

Every command has a Python twin (see [concepts](concepts.md)). Global options go before the
command: `labmgr --home DIR jobs list`.
"""


def _subcommands(command: Any) -> dict[str, Any]:
    """A group's visible subcommands by name (empty for a plain command)."""
    commands = getattr(command, "commands", None) or {}
    return {name: commands[name] for name in sorted(commands) if not commands[name].hidden}


def _context(command: Any, name: str, parent: Any | None) -> Any:
    return command.context_class(command, info_name=name, parent=parent, terminal_width=100)


def _commands(command: Any, path: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command in `command`'s tree, depth first, subcommands in alphabetical order."""
    yield path, command
    for name, sub in _subcommands(command).items():
        yield from _commands(sub, (*path, name))


def _paragraph(text: str) -> str:
    """One paragraph joined onto one line; click's ``\\b`` (keep lines) becomes a text block."""
    if text.startswith("\b\n"):
        kept = textwrap.dedent(text[2:]).strip("\n")
        return f"```text\n{kept}\n```"
    return " ".join(text.split())


def _clean(text: str | None) -> str:
    """Help text with typer's markup-free line breaks and trailing spaces removed."""
    if not text:
        return ""
    paragraphs = [_paragraph(p) for p in text.strip().split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def _escape_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option_rows(command: Any, ctx: Any) -> list[tuple[str, str]]:
    rows: list[tuple[str, str]] = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, help_text = record
        if param.param_type_name == "argument" and not param.required:
            help_text = f"{help_text} (optional)".strip()
        rows.append((f"`{flags}`", _clean(help_text)))
    return rows


def _section(path: tuple[str, ...], command: Any, ctx: Any) -> str:
    name = " ".join(path)
    usage = command.collect_usage_pieces(ctx)
    lines = [f"{'#' * min(len(path) + 1, 4)} `{name}`", ""]
    summary = _clean(command.help)
    if summary:
        lines += [summary, ""]
    lines += ["```text", " ".join([name, *usage]), "```", ""]
    rows = _option_rows(command, ctx)
    if rows:
        lines += ["| argument / option | meaning |", "|---|---|"]
        lines += [f"| {_escape_cell(flags)} | {_escape_cell(text)} |" for flags, text in rows]
        lines.append("")
    visible = list(_subcommands(command))
    if visible:
        lines.append("Commands: " + ", ".join(f"`{name} {n}`" for n in visible) + ".")
        lines.append("")
    return "\n".join(lines)


def render_reference(app: typer.Typer | None = None) -> str:
    """The markdown reference of every command of `app` (default: the `labmgr` app)."""
    if app is None:
        from labmgr.cli.app import app as labmgr_app

        app = labmgr_app
    root = typer.main.get_command(app)
    parts = [_HEADER.format(regenerate=REGENERATE)]
    contexts: dict[tuple[str, ...], Any] = {}
    for path, command in _commands(root, ("labmgr",)):
        contexts[path] = _context(command, path[-1], contexts.get(path[:-1]))
        parts.append(_section(path, command, contexts[path]))
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the reference, or with `--check FILE` compare it with FILE (exit 1 if stale)."""
    parser = argparse.ArgumentParser(prog="python -m tools.cli_reference")
    parser.add_argument("--check", metavar="FILE", help="exit 1 when FILE is out of date")
    args = parser.parse_args(argv)
    text = render_reference()
    if args.check is None:
        sys.stdout.write(text)
        return 0
    current = Path(args.check).read_text(encoding="utf-8") if Path(args.check).exists() else ""
    if current != text:
        print(f"{args.check} is out of date; regenerate it with: {REGENERATE}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
