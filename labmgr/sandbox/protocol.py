"""What a handler receives (with the list page every list endpoint shares) and returns."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import unquote

from labmgr.sandbox.accounts import Account
from labmgr.sandbox.errors import APIError, bad_request, invalid_body, invalid_value, server_error

H = TypeVar("H")


class RouteTable(Generic[H]):
    """Routes as (method, path pattern, stats name, handler): `{name}` in a pattern matches
    one path segment, the `greedy` one (such as ``{path}``) any text, '/' included."""

    def __init__(self, routes: Sequence[tuple[str, str, str, H]], greedy: str) -> None:
        self.routes = list(routes)
        self._patterns = [
            re.compile(re.sub(r"\{\w+\}", "([^/]+)", path.replace(greedy, "(.+)")))
            for _, path, _, _ in self.routes
        ]

    def match(self, method: str, path: str) -> tuple[str, H, tuple[str, ...]] | None:
        """The stats name, handler and percent-decoded path parameters of `path`."""
        for (route_method, _, name, handler), regex in zip(
            self.routes, self._patterns, strict=True
        ):
            found = regex.fullmatch(path) if route_method == method else None
            if found:
                return name, handler, tuple(unquote(g) for g in found.groups())
        return None


@dataclass
class Request:
    method: str
    params: tuple[str, ...]
    """Path parameters in order (already percent-decoded)."""
    query: dict[str, str]
    body: bytes
    headers: dict[str, str]
    account: Account
    asgi_scope: dict[str, Any] = field(repr=False, default_factory=dict)
    asgi_receive: Any = field(repr=False, default=None)
    _parsed: dict[str, Any] | None = field(repr=False, default=None, compare=False)

    def json(self) -> dict[str, Any]:
        """The JSON object body; an empty body is an empty object (parsed once)."""
        if self._parsed is None and self.body:
            try:
                data = json.loads(self.body)
            except ValueError:
                raise invalid_body() from None
            if not isinstance(data, dict):
                raise invalid_body("The request body must be a JSON object.")
            self._parsed = data
        return self._parsed or {}

    def owned(self, records: dict[str, Any], message: str, param: str | None = None) -> Any:
        """The record named by the path's id if it belongs to the caller, else a 404 whose
        `message` may name the id as ``{id}``."""
        record = records.get(self.params[0])
        if record is None or record["scope"] != self.account.scope:
            raise APIError(404, message.format(id=self.params[0]), param=param)
        return record

    def int_query(self, name: str, default: int) -> int:
        raw = self.query.get(name) or default
        try:
            return int(raw)
        except ValueError:
            message = f"Invalid '{name}': expected an integer, got {raw!r}."
            raise bad_request(message, param=name) from None

    def page(
        self,
        items: Sequence[Any],
        default: int,
        maximum: int,
        first_last: bool = True,
        ordered: bool = False,
    ) -> dict[str, Any]:
        """The page of `items` after the query's `after`, `limit` long; `ordered`: `items` are
        oldest first and the query's `order` (default ``desc``) says which way to list them."""
        order = self.query.get("order") or "desc"
        if ordered and order not in ("asc", "desc"):
            raise invalid_value(order, ("asc", "desc"), "order")
        if ordered and order == "desc":
            items = items[::-1]
        limit = self.int_query("limit", default)
        if not 1 <= limit <= maximum:
            message = f"Invalid 'limit': {limit}. It must be between 1 and {maximum}."
            raise bad_request(message, param="limit")
        ids = [item["id"] for item in items]
        after = self.query.get("after")
        start = (ids.index(after) + 1 if after in ids else len(items)) if after else 0
        data = list(items[start : start + limit])
        page: dict[str, Any] = {"object": "list", "data": data}
        if first_last:
            page["first_id"] = data[0]["id"] if data else None
            page["last_id"] = data[-1]["id"] if data else None
        page["has_more"] = start + limit < len(items)
        return page


@dataclass
class Response:
    """A complete response: JSON-ready `payload`, or raw bytes with a content type."""

    payload: Any
    status: int = 200
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class StreamResponse:
    """A server-sent-events response: already encoded `data: …` frames."""

    frames: list[bytes]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    usage: dict[str, Any] | None = None
    """The streamed completion's usage (whether or not the client asked to receive it)."""


def error_response(exc: Exception, where: str) -> Response:
    """An `APIError`'s answer; any other exception is a bug, logged, and still answered like
    the API: a 500 with a body (a bare 400 would be retried by the Tinker SDK)."""
    if not isinstance(exc, APIError):
        logging.getLogger("labmgr.sandbox").exception("sandbox: %s failed", where)
        exc = server_error()
    return Response(exc.body(), status=exc.status, headers=exc.headers)
