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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import uvicorn

from labmgr.sandbox.accounts import AccountBook
from labmgr.sandbox.app import SandboxApp, create_app
from labmgr.sandbox.config import SandboxConfig
from labmgr.sandbox.errors import SandboxError


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_DROP_MESSAGE = "ASGI callable returned without completing response."


def _uvicorn_config(app: SandboxApp) -> uvicorn.Config:
    # Injected connection drops are deliberate: keep uvicorn from logging them as errors.
    logging.getLogger("uvicorn.error").addFilter(lambda r: r.getMessage() != _DROP_MESSAGE)
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


def _bind(host: str, port: int) -> tuple[socket.socket, str]:
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(4096)
    shown = f"[{host}]" if ":" in host else host
    return sock, f"http://{shown}:{sock.getsockname()[1]}/v1"


def serve_sandbox(
    config: SandboxConfig,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    on_listening: Callable[[str], None] = print,
) -> None:
    """Serve until SIGINT/SIGTERM; `on_listening` gets the base URL. `SandboxError` when the
    accounts or state cannot be read or the address bound."""
    try:
        app = create_app(config)
    except SandboxError:
        raise
    except ValueError as exc:  # a state file from another version, or damaged
        raise SandboxError(str(exc)) from None
    except OSError as exc:
        raise SandboxError(
            f"cannot use the state directory {config.state_dir}: {exc.strerror}"
        ) from None
    try:
        sock, url = _bind(host, port)
    except OSError as exc:
        raise SandboxError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    on_listening(url)
    uvicorn.Server(_uvicorn_config(app)).run(sockets=[sock])


@dataclass
class SandboxHandle:
    """A running sandbox: its base URL and the admin endpoints as methods."""

    base_url: str

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = json.dumps(body).encode() if body is not None else b""
        request = urllib.request.Request(
            self.base_url.removesuffix("/v1") + path,
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
        return dict(self._call("POST", "/sandbox/faults", faults))

    def set_limits(self, limits: Mapping[str, Any]) -> dict[str, Any]:
        """`POST /sandbox/limits`: enforce these limits from now on (`{}` removes them)."""
        return dict(self._call("POST", "/sandbox/limits", dict(limits)))

    def limits(self) -> dict[str, Any]:
        return dict(self._call("GET", "/sandbox/limits"))

    def reset(self) -> None:
        """Clear counters, go back to the start-up faults and limits; objects stay."""
        self._call("POST", "/sandbox/reset", {})


@contextlib.contextmanager
def run_sandbox(
    config: SandboxConfig | None = None,
    /,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    in_process: bool = True,
    **options: Any,
) -> Iterator[SandboxHandle]:
    """Start a sandbox from a `SandboxConfig` or its fields (`accounts` may be an `AccountBook`
    in process), yield its handle, stop it on exit; `in_process=False` runs a subprocess."""
    book = (
        options.pop("accounts", None) if isinstance(options.get("accounts"), AccountBook) else None
    )
    if config is None:
        config = SandboxConfig.of(**options)
    elif options:
        raise TypeError("give either a SandboxConfig or its fields as keywords, not both")
    if in_process:
        with _in_thread(config, book, host, port) as handle:
            yield handle
    else:
        if book is not None:
            raise ValueError("a subprocess sandbox needs `accounts` as a file path")
        with _in_subprocess(config, host, port) as handle:
            yield handle


@contextlib.contextmanager
def _in_thread(
    config: SandboxConfig, accounts: AccountBook | None, host: str, port: int
) -> Iterator[SandboxHandle]:
    app = create_app(config, accounts=accounts)
    sock, url = _bind(host, port)
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
        yield SandboxHandle(url)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@contextlib.contextmanager
def _in_subprocess(config: SandboxConfig, host: str, port: int) -> Iterator[SandboxHandle]:
    command = [sys.executable, "-m", "labmgr.sandbox", "--host", host, "--port", str(port)]
    # The config goes through stdin: a limits table can be long for a command line.
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as proc:
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(config.model_dump_json())
            proc.stdin.close()
            line = proc.stdout.readline().strip()
            if not line.startswith("http"):
                raise RuntimeError(
                    f"the sandbox subprocess did not print its URL (got {line!r}); its error "
                    "is above"
                )
            yield SandboxHandle(line)
        finally:
            proc.terminate()
            try:  # a server still draining connections gets a few seconds, then is killed
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
