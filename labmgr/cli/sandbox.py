"""`labmgr sandbox …`: the offline OpenAI-compatible server."""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(help="Run the offline OpenAI-compatible sandbox server.", no_args_is_help=True)

_ACCOUNTS_HELP = (
    "YAML or JSON file: a list under `accounts:` of `key` (what clients send), `organization` "
    "(org-alpha), `slug` (its name in ft: model ids) and optional `project`. Only listed keys "
    "are accepted (others get 401), and each sees only its organization/project's files, jobs, "
    "batches and models. Default: any key, organization org-sandbox, project proj_default."
)
_LIMITS_HELP = (
    "JSON or TOML file of rate limits per organization and model family: "
    '{"gpt-4.1-mini": {"rpm": 3000, "tpm": 2000000, "batch_queue_tokens": 20000000}, '
    '"*": {"rpm": 500}} ("*": every other model; fine-tunes count under their base; '
    '"projects": {"proj_x": {...}} caps one project). Over a limit: a 429, with real '
    "x-ratelimit-* headers. Default: no limits. POST /sandbox/limits changes them live."
)

_JUDGE_ERROR_HELP = (
    "MODEL=RATE: the chance judge model MODEL gives the wrong verdict to a pairwise (A or B) "
    "or label prompt; MODEL * sets every other model. Repeatable. Default: *=0.1."
)
_POSITION_BIAS_HELP = (
    "MODEL=RATE: the chance judge model MODEL simply picks the first-shown answer (A) of a "
    "pairwise prompt, decided before any error; MODEL * sets every other model. Repeatable. "
    "Default: *=0."
)


@app.command()
def serve(
    host: str = typer.Option(
        "127.0.0.1", metavar="<host>", help="Interface to bind; not loopback exposes the server."
    ),
    port: int = typer.Option(0, metavar="<port>", help="Port to bind; 0 picks a free one."),
    job_seconds: float = typer.Option(
        1.0, metavar="<seconds>", help="How long a fine-tuning job takes to its final state."
    ),
    batch_seconds: float = typer.Option(1.0, metavar="<seconds>", help="How long a batch takes."),
    latency_ms: float = typer.Option(
        0.0, metavar="<ms>", help="Latency added to every /v1 request, in milliseconds."
    ),
    jitter_ms: float = typer.Option(
        0.0, metavar="<ms>", help="Random ± jitter on that latency, in milliseconds."
    ),
    state_dir: Annotated[
        Path | None,
        typer.Option(
            metavar="<dir>",
            help="Keep files, jobs, batches and models here across restarts (default: none).",
        ),
    ] = None,
    accounts: Annotated[Path | None, typer.Option(metavar="<file>", help=_ACCOUNTS_HELP)] = None,
    limits: Annotated[Path | None, typer.Option(metavar="<file>", help=_LIMITS_HELP)] = None,
    judge_error: Annotated[
        list[str] | None, typer.Option(metavar="<model=rate>", help=_JUDGE_ERROR_HELP)
    ] = None,
    position_bias: Annotated[
        list[str] | None, typer.Option(metavar="<model=rate>", help=_POSITION_BIAS_HELP)
    ] = None,
) -> None:
    """Serve the OpenAI API offline until interrupted (Ctrl-C or SIGTERM).

    The first line printed is the base URL to give clients, e.g.
    http://127.0.0.1:43117/v1. Admin endpoints beside /v1: GET /sandbox/stats,
    GET|POST /sandbox/faults (latency_ms, jitter_ms, rate_429, rate_500, rate_timeout,
    rate_drop, retry_after_ms, daily_job_limit, quota_requests, endpoints,
    first_attempt_only, batch_line_error_rate, batch_window_s),
    GET|POST /sandbox/limits, POST /sandbox/reset.
    """
    from labmgr.sandbox import SandboxConfig, SandboxError, is_loopback, serve_sandbox
    from labmgr.sandbox.behaviour import JUDGE_ERROR

    def listening(url: str) -> None:
        print(url, flush=True)
        # uvicorn stops gracefully on SIGINT/SIGTERM, then re-raises the signal: exit quietly.
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, _exit_quietly)
        if not is_loopback(host):
            typer.echo(
                f"warning: listening on {host}, not loopback: other machines can reach this "
                "sandbox and use any API key it accepts",
                err=True,
            )

    try:
        rates = {
            "judge_error": _rates("--judge-error", judge_error, {"*": JUDGE_ERROR}),
            "position_bias": _rates("--position-bias", position_bias, {"*": 0.0}),
        }
        config = SandboxConfig.of(
            **rates,
            job_seconds=job_seconds,
            batch_seconds=batch_seconds,
            latency_ms=latency_ms,
            jitter_ms=jitter_ms,
            state_dir=state_dir,
            accounts=accounts,
            limits=limits,
        )
        serve_sandbox(config, host=host, port=port, on_listening=listening)
    except SandboxError as exc:
        typer.echo(f"error: {_option_names(str(exc))}", err=True)
        raise typer.Exit(2) from None
    sys.stdout.flush()


def _rates(option: str, values: list[str] | None, default: dict[str, float]) -> dict[str, float]:
    """`MODEL=RATE` options as a table over `default`."""
    from labmgr.sandbox import SandboxError

    table = dict(default)
    for value in values or ():
        model, _, rate = value.rpartition("=")
        try:
            number = float(rate)
        except ValueError:
            number = -1.0
        if not model or not 0.0 <= number <= 1.0:
            raise SandboxError(
                f"{option} {value!r}: give MODEL=RATE, a model id (or *) and a probability "
                "from 0 to 1, e.g. gpt-4.1-mini=0.2"
            )
        table[model] = number
    return table


def _option_names(message: str) -> str:
    """A config message in the CLI's words (`--job-seconds`, not `job_seconds`)."""
    for name in ("job_seconds", "batch_seconds", "latency_ms", "jitter_ms"):
        if message.startswith(name):
            return "--" + name.replace("_", "-") + message[len(name) :]
    return message


def _exit_quietly(signum: int, frame: object) -> None:
    raise SystemExit(0)
