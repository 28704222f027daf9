"""The FSM endpoint and the rule that no notebook-bcc route answers without credentials."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from jupyter_server.base.handlers import APIHandler
from tornado.httpclient import HTTPClientError, HTTPResponse
from tornado.routing import PathMatches, Rule
from tornado.web import RequestHandler
from tornado.websocket import WebSocketHandler

from notebook_bcc.errors import UnknownNameError
from notebook_bcc.fsm.table import TRANSITIONS
from notebook_bcc.models.names import Event, State
from notebook_bcc.server.app import NotebookBccApp
from notebook_bcc.server.handlers import error_body

Fetch = Callable[..., Awaitable[HTTPResponse]]

NO_CREDENTIALS = {"Authorization": ""}
"""Overrides pytest-jupyter's token header: the request carries no token and no cookie."""

API_REFUSAL = 403
"""What jupyter_server 2.21 answers an unauthenticated API request (APIHandler.get_login_url)."""


async def _refusal(fetch: Fetch, path: str, method: str) -> HTTPClientError:
    body = b"{}" if method in {"POST", "PUT", "PATCH"} else None
    with pytest.raises(HTTPClientError) as caught:
        await fetch(
            path, method=method, body=body, headers=dict(NO_CREDENTIALS), follow_redirects=False
        )
    return caught.value


async def test_fsm_returns_the_whole_table(jp_fetch: Fetch) -> None:
    response = await jp_fetch("notebook-bcc", "api", "fsm")

    assert response.code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    document = json.loads(response.body)
    assert document["states"] == [s.value for s in State]
    assert len(document["states"]) == 14
    assert all(s == s.lower() for s in document["states"])
    assert document["events"] == [e.value for e in Event]
    assert len(document["events"]) == 22
    assert len(document["transitions"]) == 46  # seed 003's 45 and idle --CANCEL--> cancelled
    assert document["transitions"][0] == {
        "from": "idle",
        "event": "START_WORKFLOW",
        "to": "stage_running",
    }
    pairs = {(t["from"], t["event"], t["to"]) for t in document["transitions"]}
    assert pairs == {(r.source.value, r.event.value, r.target.value) for r in TRANSITIONS}


async def test_fsm_refuses_a_request_without_credentials(jp_fetch: Fetch) -> None:
    error = await _refusal(jp_fetch, "notebook-bcc/api/fsm", "GET")

    assert error.code == API_REFUSAL
    assert error.response is not None
    body = json.loads(error.response.body)
    assert set(body) == {"code", "message", "details"}
    assert body["code"] == "forbidden"


async def test_fsm_refuses_a_wrong_token(jp_fetch: Fetch) -> None:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch(
            "notebook-bcc", "api", "fsm", headers={"Authorization": "token not-the-token"}
        )
    assert caught.value.code == API_REFUSAL


async def test_unknown_method_answers_the_json_error_shape(jp_fetch: Fetch) -> None:
    with pytest.raises(HTTPClientError) as caught:
        await jp_fetch("notebook-bcc", "api", "fsm", method="DELETE")
    assert caught.value.code == 405
    assert caught.value.response is not None
    body = json.loads(caught.value.response.body)
    assert body == {"code": "method_not_allowed", "message": "Method Not Allowed", "details": {}}


def _concrete_path(pattern: str) -> str:
    """Turn a route regex into a path the route matches, filling each group with ``x``."""
    path = re.sub(r"\((?:\?P<\w+>)?[^()]*\)", "x", pattern.strip("^$"))
    assert not re.search(r"[()\[\]*+?\\|]", path), f"cannot fill route pattern {pattern!r}"
    return path


def _implemented_methods(handler: type[RequestHandler]) -> list[str]:
    return [
        method
        for method in handler.SUPPORTED_METHODS
        if getattr(handler, method.lower()) is not RequestHandler._unimplemented_method
    ]


def _router_rules(router: Any) -> Iterator[Rule]:
    for rule in router.rules:
        if hasattr(rule.target, "rules"):
            yield from _router_rules(rule.target)
        else:
            yield rule


def test_the_server_serves_exactly_the_app_routes(
    jp_serverapp: Any, bcc_app: NotebookBccApp
) -> None:
    """Guards the next test: it enumerates the app's list, so that list must be complete."""
    ours = {
        rule.matcher.regex.pattern
        for rule in _router_rules(jp_serverapp.web_app.default_router)
        if isinstance(rule.matcher, PathMatches)
        and (
            "notebook-bcc" in rule.matcher.regex.pattern
            or getattr(rule.target, "__module__", "").startswith("notebook_bcc")
        )
    }
    base = jp_serverapp.base_url
    assert ours == {f"{base}{pattern.lstrip('/')}$" for pattern, *_ in bcc_app.handlers}
    assert ours, "the extension registered no route"


async def test_no_route_answers_without_credentials(
    jp_fetch: Fetch, bcc_app: NotebookBccApp
) -> None:
    checked = 0
    for pattern, handler, *_ in bcc_app.handlers:
        path = _concrete_path(pattern)
        methods = _implemented_methods(handler)
        assert methods, f"{handler.__name__} implements no HTTP method"
        for method in methods:
            where = f"{method} {path} ({handler.__name__})"
            if method == "OPTIONS" and handler.options is APIHandler.options:
                # jupyter_server's own CORS preflight is public on purpose; it returns no data.
                response = await jp_fetch(path, method="OPTIONS", headers=dict(NO_CREDENTIALS))
                assert response.body == b"", where
                continue
            error = await _refusal(jp_fetch, path, method)
            if issubclass(handler, WebSocketHandler):
                # An unauthenticated websocket upgrade is redirected to the login page.
                assert error.code in {302, 403}, where
                if error.code == 302:
                    assert error.response is not None
                    assert "login" in error.response.headers["Location"], where
            else:
                assert error.code == API_REFUSAL, where
            checked += 1
    assert checked >= 1


def test_error_body_keeps_project_errors_and_hides_internal_ones() -> None:
    bad = UnknownNameError("event", "JUMP", ["RESET"])
    assert error_body(400, bad) == bad.to_json()
    assert error_body(500, RuntimeError("secret path /root/x")) == {
        "code": "internal_error",
        "message": "Unhandled server error",
        "details": {},
    }
    assert error_body(404, None) == {"code": "not_found", "message": "Not Found", "details": {}}
