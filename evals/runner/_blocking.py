"""The process's runner loop: one event loop in a thread, kept for the process's life so its
HTTP clients and connections serve every fetch; `run_blocking` runs a coroutine on it."""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Callable, Coroutine
from concurrent import futures
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")


class _RunnerLoop:
    """An event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        try:
            import uvloop

            self.loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
        except ImportError:  # pragma: no cover - uvloop is absent on Windows
            self.loop = asyncio.new_event_loop()
        self.closing: list[Callable[[], Coroutine[Any, Any, None]]] = []
        """Coroutines run on the loop before it stops at exit (closing clients)."""
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="evals-runner", daemon=True
        )
        self.thread.start()

    def stop(self) -> None:
        """Run the closing coroutines (a few seconds at most), then stop the loop."""
        if self.loop.is_closed() or not self.thread.is_alive():
            return

        async def close_all() -> None:
            await asyncio.gather(*(close() for close in self.closing), return_exceptions=True)

        with suppress(Exception):
            asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(timeout=5)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)


_RUNNER: _RunnerLoop | None = None
_RUNNER_LOCK = threading.Lock()


def _runner() -> _RunnerLoop:
    global _RUNNER
    with _RUNNER_LOCK:
        if _RUNNER is None or not _RUNNER.thread.is_alive():
            _RUNNER = _RunnerLoop()
        return _RUNNER


def _forget_runner() -> None:
    """In a forked child: the parent's loop thread does not exist here."""
    global _RUNNER, _RUNNER_LOCK
    _RUNNER = None
    _RUNNER_LOCK = threading.Lock()


def _stop_runner() -> None:
    if _RUNNER is not None:
        _RUNNER.stop()


os.register_at_fork(after_in_child=_forget_runner)
atexit.register(_stop_runner)


def runner_loop() -> asyncio.AbstractEventLoop:
    """The process's runner loop (started on first use), for work from another thread."""
    runner = _runner()
    if threading.current_thread() is runner.thread:
        raise RuntimeError("the runner loop cannot wait for work handed to itself")
    return runner.loop


def close_at_exit(close: Callable[[], Coroutine[Any, Any, None]]) -> None:
    """Run `close()` on the runner loop before it stops at exit."""
    _runner().closing.append(close)


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `make()` on the runner loop and return its result; Ctrl-C cancels it."""
    future = asyncio.run_coroutine_threadsafe(make(), runner_loop())
    try:
        while not futures.wait([future], timeout=0.1).done:
            pass
    except KeyboardInterrupt:
        future.cancel()
        raise
    return future.result()
