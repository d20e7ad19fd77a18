"""Running the sandbox: uvicorn in a thread or a subprocess, and the handle tests use."""

from __future__ import annotations

import contextlib
import ipaddress
import json
import logging
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import uvicorn

from labmgr.sandbox.accounts import AccountBook
from labmgr.sandbox.app import SandboxApp, create_app

__all__ = ["SandboxHandle", "bind_socket", "is_loopback", "run_sandbox", "serve_forever"]


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_DROP_MESSAGE = "ASGI callable returned without completing response."


class _HideInjectedDrops(logging.Filter):
    """Injected connection drops are deliberate; keep uvicorn from logging them as errors."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != _DROP_MESSAGE


def _uvicorn_config(app: SandboxApp) -> uvicorn.Config:
    logging.getLogger("uvicorn.error").addFilter(_HideInjectedDrops())
    return uvicorn.Config(
        app,
        loop="uvloop" if sys.platform != "win32" else "asyncio",
        http="httptools",
        lifespan="off",
        log_level="warning",
        access_log=False,
        server_header=False,
        timeout_keep_alive=30,
        backlog=4096,
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0 picks a free one)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(4096)
    sock.set_inheritable(True)
    return sock


def base_url_of(sock: socket.socket, host: str) -> str:
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/v1"


def serve_forever(app: SandboxApp, sock: socket.socket) -> None:
    """Serve on `sock` in this thread until SIGINT/SIGTERM (uvicorn handles the signals)."""
    uvicorn.Server(_uvicorn_config(app)).run(sockets=[sock])


@dataclass
class SandboxHandle:
    """A running sandbox: its base URL and the admin endpoints as methods."""

    base_url: str
    app: SandboxApp | None = field(default=None, repr=False)
    """The app object when it runs in this process (None for a subprocess)."""

    @property
    def root_url(self) -> str:
        return self.base_url.removesuffix("/v1")

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else b""
        request = urllib.request.Request(
            self.root_url + path,
            data=data if method == "POST" else None,
            method=method,
            headers={"content-type": "application/json"},
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=30) as response:
            return json.loads(response.read())

    def stats(self) -> dict[str, Any]:
        """`GET /sandbox/stats`: requests per endpoint, usage per model, peak concurrency."""
        return dict(self._call("GET", "/sandbox/stats"))

    def set_faults(self, **faults: Any) -> dict[str, Any]:
        """`POST /sandbox/faults` with these settings; returns the full fault configuration."""
        return dict(self._call("POST", "/sandbox/faults", faults))

    def reset(self) -> None:
        """`POST /sandbox/reset`: clear counters and faults (files, jobs, models stay)."""
        self._call("POST", "/sandbox/reset", {})


@contextlib.contextmanager
def run_sandbox(
    *,
    job_seconds: float = 1.0,
    latency_ms: float = 0.0,
    jitter_ms: float = 0.0,
    state_dir: str | Path | None = None,
    accounts: str | Path | AccountBook | None = None,
    host: str = "127.0.0.1",
    port: int = 0,
    in_process: bool = True,
) -> Iterator[SandboxHandle]:
    """Start a sandbox, yield its handle, stop it on exit.

    `in_process=True` serves from a background thread of this process; `False` runs
    `python -m labmgr sandbox serve` as a subprocess (its CPU is then separate, which is
    what benchmarks and demos want).
    """
    if in_process:
        with _in_thread(job_seconds, latency_ms, jitter_ms, state_dir, accounts, host, port) as h:
            yield h
    else:
        if isinstance(accounts, AccountBook):
            raise ValueError("a subprocess sandbox needs `accounts` as a file path")
        with _in_subprocess(
            job_seconds, latency_ms, jitter_ms, state_dir, accounts, host, port
        ) as h:
            yield h


@contextlib.contextmanager
def _in_thread(
    job_seconds: float,
    latency_ms: float,
    jitter_ms: float,
    state_dir: str | Path | None,
    accounts: str | Path | AccountBook | None,
    host: str,
    port: int,
) -> Iterator[SandboxHandle]:
    app = create_app(
        job_seconds=job_seconds,
        latency_ms=latency_ms,
        jitter_ms=jitter_ms,
        state_dir=state_dir,
        accounts=accounts,
    )
    sock = bind_socket(host, port)
    server = uvicorn.Server(_uvicorn_config(app))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="labmgr-sandbox", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            sock.close()
            raise RuntimeError("the sandbox server did not start; see the log above")
        time.sleep(0.005)
    try:
        yield SandboxHandle(base_url_of(sock, host), app)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextlib.contextmanager
def _in_subprocess(
    job_seconds: float,
    latency_ms: float,
    jitter_ms: float,
    state_dir: str | Path | None,
    accounts: str | Path | None,
    host: str,
    port: int,
) -> Iterator[SandboxHandle]:
    command = [
        sys.executable,
        "-m",
        "labmgr",
        "sandbox",
        "serve",
        "--host",
        host,
        "--port",
        str(port),
        "--job-seconds",
        str(job_seconds),
        "--latency-ms",
        str(latency_ms),
        "--jitter-ms",
        str(jitter_ms),
    ]
    if state_dir is not None:
        command += ["--state-dir", str(state_dir)]
    if accounts is not None:
        command += ["--accounts", str(accounts)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("http"):
            raise RuntimeError(f"the sandbox subprocess did not print its URL (got {line!r})")
        yield SandboxHandle(line)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
