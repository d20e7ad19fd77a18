"""Run a coroutine to completion from synchronous code: in scripts on a fresh event loop, and
inside a running loop (Jupyter) on a worker thread. Ctrl-C cancels it promptly; whatever was
already persisted stays."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["run_blocking"]

T = TypeVar("T")


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is absent on Windows
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory


def run_blocking(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run `make()` and return its result, whether or not an event loop is running here."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        with asyncio.Runner(loop_factory=_loop_factory()) as runner:
            return runner.run(make())
    return _run_in_thread(make)


def _run_in_thread(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    outcome: dict[str, Any] = {}
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def target() -> None:
        factory = _loop_factory()
        loop = factory() if factory else asyncio.new_event_loop()
        try:
            task = loop.create_task(make())
            holder["loop"], holder["task"] = loop, task
            ready.set()
            outcome["result"] = loop.run_until_complete(task)
        except BaseException as error:
            outcome["error"] = error
        finally:
            ready.set()
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    thread = threading.Thread(target=target, name="evals-runner", daemon=True)
    thread.start()
    try:
        while thread.is_alive():
            thread.join(0.1)
    except KeyboardInterrupt:
        ready.wait()
        loop, task = holder.get("loop"), holder.get("task")
        if loop is not None and task is not None and not loop.is_closed():
            loop.call_soon_threadsafe(task.cancel)
        thread.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    result: T = outcome["result"]
    return result
