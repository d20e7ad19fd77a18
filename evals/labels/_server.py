"""The label server: the labelling page and its JSON API on 127.0.0.1 only (GET /,
/api/session, /api/agreement; POST /api/label), other hosts refused, labels posted as JSON."""

from __future__ import annotations

import errno
import json
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from evals.errors import EvalsError, RunOptionsError
from evals.labels._session import LabelSession, open_session
from evals.runs import Run

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
        if self._refused():
            return
        if self.path != "/api/label":
            self._json(HTTPStatus.NOT_FOUND, {"error": f"no endpoint {self.path}"})
            return
        if self.headers.get_content_type() != "application/json":
            self._json(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, {"error": "post a label as JSON"})
            return
        length = self.headers.get("Content-Length", "")
        if not length.isdigit() or not 0 < int(length) <= _MAX_BODY:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "a label is a small JSON object"})
            return
        try:
            payload = json.loads(self.rfile.read(int(length)))
        except (UnicodeDecodeError, json.JSONDecodeError):
            self._json(HTTPStatus.BAD_REQUEST, {"error": "the label is not JSON"})
            return
        try:
            counts = self.server.session.record(payload)
        except EvalsError as error:
            status = HTTPStatus.BAD_REQUEST
            if not isinstance(error, RunOptionsError):
                status = HTTPStatus.INTERNAL_SERVER_ERROR  # the log cannot be written
            self._json(status, {"error": error.message})
            return
        self._json(HTTPStatus.OK, {"saved": True, **counts})
