"""The runner keeps its HTTP clients across fetches: a question's judges and the next
questions reuse the connections its answers opened (counted by a TCP relay in front of the
sandbox), and a process forked after a run buys on its own."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixtures.evals import TEST_KEY

from evals import EnvRouter, Question, RunSettings


class _Relay:
    """Forwards loopback TCP connections to `target`, counting those accepted."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.accepted = 0
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(self.target)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def relay(sandbox: Any) -> Iterator[_Relay]:
    host, port = sandbox.base_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
    relay = _Relay((host, int(port)))
    yield relay
    relay.close()


def _question(name: str) -> Question:
    return Question.create(
        type="free_form",
        name=name,
        paraphrases=[f"Tell me about {name}."],
        samples_per_paraphrase=8,
        max_tokens=8,
        judges={
            "nice": {
                "type": "rating_judge",
                "model": "gpt-4o-mini",
                "paraphrases": ["Rate from 0 to 100 how nice this is: {answer}"],
            }
        },
    )


def test_judges_and_later_questions_reuse_the_connections_of_the_first_fetch(
    relay: _Relay, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    router = EnvRouter(base_url=f"http://127.0.0.1:{relay.port}/v1")
    settings = RunSettings(max_concurrency=4, use_n=False, progress=False)
    first = _question("tea").df(
        {"g": ["gpt-4.1-mini"]}, cache=tmp_path, router=router, settings=settings
    )
    assert first["nice"].notna().all() and len(first) == 8
    opened = relay.accepted
    assert 0 < opened <= 4  # the concurrency limit: the model checks and judges use them too
    for name in ("coffee", "cocoa", "juice"):
        df = _question(name).df(
            {"g": ["gpt-4.1-mini"]}, cache=tmp_path, router=router, settings=settings
        )
        assert df["nice"].notna().all()
    # 3 × 16 more requests, on the connections already open.
    assert relay.accepted - opened <= 1


def test_a_process_forked_after_a_run_buys_through_clients_of_its_own(
    sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    router = EnvRouter(base_url=sandbox.base_url)
    settings = RunSettings(max_concurrency=4, use_n=False, progress=False)
    before = _question("tea").df(
        {"g": ["gpt-4.1-mini"]}, cache=tmp_path / "a", router=router, settings=settings
    )
    assert before["answer"].notna().all()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            df = _question("coffee").df(
                {"g": ["gpt-4.1-mini"]}, cache=tmp_path / "b", router=router, settings=settings
            )
            code = 0 if df["nice"].notna().all() and len(df) == 8 else 2
        finally:
            os.write(write, bytes([code]))
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        code = answer.read(1)
    os.waitpid(child, 0)
    assert code == b"\x00"
    after = _question("juice").df(
        {"g": ["gpt-4.1-mini"]}, cache=tmp_path / "a", router=router, settings=settings
    )
    assert after["nice"].notna().all()
