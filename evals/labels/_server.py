"""`labels serve`: one labeller labelling one score of a run (the answers `labels export`
draws, blind; each digit key's value; the log; the judge's agreement so far), served with its
JSON API on 127.0.0.1 only (GET /, /api/session, /api/agreement; POST /api/label as JSON)."""

from __future__ import annotations

import errno
import json
import math
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
from filelock import FileLock

from evals.errors import EvalsError, RunOptionsError
from evals.labels._export import candidates, draw_sample
from evals.labels._log import EVENTS, LabelLog, check_labeller
from evals.runs import HUMAN_PREFIX, Run, agreement_table, load_run
from evals.stats import Scale

FIVE_POINTS = 5  # a scale that is not a few whole digits is labelled on five points


def digit_values(scale: Scale) -> dict[str, float]:
    """What each digit key labels on `scale`: the digit itself on a scale of whole numbers
    within 0–9 (a 1–5 rating, a 0/1 class), else keys 1–5 on five evenly spaced points from
    low to high (on 0–100: 0, 25, 50, 75, 100)."""
    low, high = float(scale.low), float(scale.high)
    if low.is_integer() and high.is_integer() and low >= 0 and high <= 9:
        return {str(d): float(d) for d in range(int(low), int(high) + 1)}
    step = scale.width / (FIVE_POINTS - 1)
    return {str(k): scale.low + (k - 1) * step for k in range(1, FIVE_POINTS + 1)}


class LabelSession:
    """What the label server serves: the page's data, each label made, and the agreement so
    far. Thread-safe; `close` releases the log."""

    def __init__(
        self, run: Run, score: str, items: pd.DataFrame, scales: dict[str, Scale], log: LabelLog
    ) -> None:
        self.run, self.score, self.log = run, score, log
        self.items: list[dict[str, Any]] = []  # as the page shows them: no model, group, judge
        for row in items.to_dict("records"):
            scale = scales[str(row["question"])]
            shown = {key: str(row[key]) for key in ("id", "question", "prompt", "answer")}
            keys = digit_values(scale)
            self.items.append({**shown, "low": scale.low, "high": scale.high, "keys": keys})
        self._facts = items.set_index("id")[["question", "model", "paraphrase_ix", "sample_ix"]]
        self._by_id = {item["id"]: item for item in self.items}
        self._state = log.state(score)
        self._lock = threading.Lock()
        self._agreement: tuple[int, list[dict[str, Any]]] | None = None
        self.saved_now = 0

    @property
    def labelled(self) -> int:
        return sum(item["id"] in self._state.labels for item in self.items)

    def page(self) -> dict[str, Any]:
        """The answers in order with their keys, the labels and skips so far, and where to
        open (the first answer neither labelled nor skipped)."""
        ids = [item["id"] for item in self.items]
        with self._lock:
            labels = {i: self._state.labels[i] for i in ids if i in self._state.labels}
            skipped = [i for i in ids if i in self._state.skipped]
        passed = {*labels, *skipped}
        start = next(
            (n for n, i in enumerate(ids) if i not in passed),
            next((n for n, i in enumerate(ids) if i not in labels), 0),
        )
        return {
            "run": self.run.path.name,
            "labeller": self.log.labeller,
            "score": self.score,
            "items": self.items,
            "labels": labels,
            "skipped": skipped,
            "start": start,
        }

    def record(self, payload: Any) -> dict[str, Any]:
        """Check and save one event from the page (`{"id", "event", "value"}`); the counts."""
        if not isinstance(payload, dict):
            raise RunOptionsError('a label is a JSON object {"id": …, "event": …, "value": …}')
        sample, event, value = payload.get("id"), payload.get("event"), payload.get("value")
        item = self._by_id.get(str(sample))
        if item is None:
            raise RunOptionsError(f"id {sample!r} is not an answer of this labelling session")
        if event not in EVENTS:
            raise RunOptionsError(f"event {event!r}: use one of {', '.join(EVENTS)}")
        number: float | None = None
        sample = item["id"]
        if event == "label":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise RunOptionsError(f"id {sample}: the label {value!r} is not a number")
            number = float(value)
            if not (math.isfinite(number) and item["low"] <= number <= item["high"]):
                raise RunOptionsError(
                    f"id {sample}: the label {value!r} is outside {item['low']:g} to "
                    f"{item['high']:g}"
                )
        with self._lock:
            self.log.append(sample, self.score, event, number)
            self._state.apply(sample, event, number)
            self.saved_now += 1
            return {"labelled": self.labelled, "skipped": len(self._state.skipped)}

    def agreement(self) -> list[dict[str, Any]]:
        """`agreement.csv`'s rows for the judge against this labeller so far; NaN as None."""
        with self._lock:
            version, labels = self.saved_now, dict(self._state.labels)
            if self._agreement is not None and self._agreement[0] == version:
                return self._agreement[1]
        rows = [
            {"id": sample, **self._facts.loc[sample].to_dict(), HUMAN_PREFIX + self.score: value}
            for sample, value in labels.items()
            if sample in self._facts.index
        ]
        table = None
        if rows:
            questions = list(dict.fromkeys(str(row["question"]) for row in rows))
            table = agreement_table(
                {q: self.run.samples(q) for q in questions},
                {q: [self.score] for q in questions},
                {q: self.run.metrics(q) for q in questions},
                {q: self.run.scales(q) for q in questions},
                pd.DataFrame(rows),
            )
        records = [] if table is None else table.to_dict("records")
        found = [{str(k): _plain(v) for k, v in row.items()} for row in records]
        with self._lock:
            self._agreement = (version, found)
        return found

    def close(self) -> None:
        self.log.close()


def _plain(value: Any) -> Any:
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def open_session(
    run: Run | str | Path,
    *,
    labeller: str,
    score: str | None = None,
    n: int = 200,
    by: str | None = None,
    seed: int = 0,
) -> LabelSession:
    """A session of `labeller` on `score` (default: the run's first judge score) over the
    answers `export_labels(run, n=n, by=by, seed=seed)` draws that have that score."""
    check_labeller(labeller)
    path = run.path if isinstance(run, Run) else Path(run)
    log = LabelLog(load_run(path).path, labeller)
    try:
        # The id key is written to run.json on first use: one server at a time makes it.
        with FileLock(str(log.path.parent / ".id-key.lock"), timeout=60):
            loaded = load_run(path)
            found = candidates(loaded)
        known = found.score_names()
        if not known:
            raise RunOptionsError(
                f"{loaded.path}: no judge score to label",
                hint="Judge the run first with `labmgr eval score`.",
            )
        chosen = score if score is not None else known[0]
        if chosen not in known:
            raise RunOptionsError(
                f"--score {chosen!r} is not a score of the run (its scores: {', '.join(known)})"
            )
        having = [q for q, scores in found.scores.items() if chosen in scores]
        table = found.table
        if not table.empty:
            table = table[table["question"].isin(having)]
        picked, _ = draw_sample(loaded, table, n=n, by=by, seed=seed)
        scales = {q: found.scores[q][chosen] for q in having}
        return LabelSession(loaded, chosen, picked, scales, log)
    except BaseException:
        log.close()
        raise


HOST = "127.0.0.1"
_STATIC = {"/": "label.html", "/label.js": "label.js", "/label.css": "label.css"}
_TYPES = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
_MAX_BODY = 64_000


class LabelServer(ThreadingHTTPServer):
    """A label server of one `LabelSession`; stop with `shutdown`, then `server_close`."""

    daemon_threads = True

    def __init__(self, session: LabelSession, port: int = 0) -> None:
        self.session = session
        try:
            super().__init__((HOST, port), _Handler)
        except OSError as error:
            session.close()
            if error.errno == errno.EADDRINUSE:
                raise RunOptionsError(
                    f"--port {port}: the port is in use on {HOST}",
                    hint="Choose another with --port, or leave it out to take a free one.",
                ) from None
            raise RunOptionsError(f"--port {port}: cannot listen on {HOST} ({error})") from None
        self.port = int(self.server_address[1])
        self.hosts = {f"{HOST}:{self.port}", f"localhost:{self.port}"}

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A tab closed while a reply was on its way is no error.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def server_close(self) -> None:
        super().server_close()
        self.session.close()


def start_label_server(
    run: Run | str | Path,
    *,
    labeller: str,
    score: str | None = None,
    n: int = 200,
    by: str | None = None,
    seed: int = 0,
    port: int = 0,
) -> LabelServer:
    """A label server of `open_session(...)` on 127.0.0.1:`port` (0: a free port); run it
    with `serve_forever()`."""
    if not 0 <= port <= 65535:
        raise RunOptionsError(f"--port {port}: use 0 (a free port) to 65535")
    session = open_session(run, labeller=labeller, score=score, n=n, by=by, seed=seed)
    return LabelServer(session, port)


class _Handler(BaseHTTPRequestHandler):
    server: LabelServer

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the terminal shows the URL and the final count

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{content_type}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("Content-Security-Policy", _POLICY)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(
            status, json.dumps(value, ensure_ascii=False).encode("utf-8"), "application/json"
        )

    def _refused(self) -> bool:
        if self.headers.get("Host", "") not in self.server.hosts:
            self._json(HTTPStatus.FORBIDDEN, {"error": "this server answers 127.0.0.1 only"})
            return True
        return False

    def do_GET(self) -> None:
        if self._refused():
            return
        path = self.path.split("?", 1)[0]
        if path in _STATIC:
            name = _STATIC[path]
            text = resources.files("evals.labels").joinpath("static", name).read_bytes()
            self._send(HTTPStatus.OK, text, _TYPES[Path(name).suffix])
        elif path == "/api/session":
            self._json(HTTPStatus.OK, self.server.session.page())
        elif path == "/api/agreement":
            self._json(HTTPStatus.OK, {"agreement": self.server.session.agreement()})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no page {path}"})

    def do_POST(self) -> None:
        if not self._refused():
            self._json(*self._label())

    def _label(self) -> tuple[int, dict[str, Any]]:
        """The status and reply to a POST: the counts once the label is saved."""
        if self.path != "/api/label":
            return HTTPStatus.NOT_FOUND, {"error": f"no endpoint {self.path}"}
        if self.headers.get_content_type() != "application/json":
            return HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "post a label as JSON"}
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or not 0 < int(length) <= _MAX_BODY:
            return HTTPStatus.BAD_REQUEST, {"error": "a label is a small JSON object"}
        try:
            payload = json.loads(self.rfile.read(int(length)))
        except (UnicodeDecodeError, json.JSONDecodeError):
            return HTTPStatus.BAD_REQUEST, {"error": "the label is not JSON"}
        try:
            counts = self.server.session.record(payload)
        except RunOptionsError as error:
            return HTTPStatus.BAD_REQUEST, {"error": error.message}
        except EvalsError as error:  # the log cannot be written
            return HTTPStatus.INTERNAL_SERVER_ERROR, {"error": error.message}
        return HTTPStatus.OK, {"saved": True, **counts}
