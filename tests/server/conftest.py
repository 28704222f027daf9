"""Fixtures for the server-extension tests: a test server with notebook_bcc enabled."""

from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from time import monotonic
from typing import Any

import pytest
from tornado.httpclient import HTTPResponse
from tornado.websocket import WebSocketClientConnection

from notebook_bcc.server.app import NotebookBccApp
from tests.conftest import FIXTURES

Fetch = Callable[..., Awaitable[HTTPResponse]]
WsFetch = Callable[..., Awaitable[WebSocketClientConnection]]
"""pytest-jupyter's ``jp_ws_fetch``: opens a websocket to the test server."""

SERVER_FIXTURES = FIXTURES / "server"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    """Enable only notebook_bcc and refuse unauthenticated access, as production should.

    ``jupyter_server_terminals`` is switched off explicitly: pytest-jupyter would add it, and its
    undecorated handlers make jupyter_server warn, which ``filterwarnings = error`` would turn
    into a failure unrelated to this project. Our own handlers must not warn.
    """
    return {
        "ServerApp": {
            "jpserver_extensions": {"notebook_bcc": True, "jupyter_server_terminals": False},
            "allow_unauthenticated_access": False,
        },
        # the test process is not a server: its objects are not frozen at each test server
        "NotebookBccApp": {
            "write_debounce": 0.1,
            "stop_timeout": 5.0,
            "freeze_gc_at_start": False,
        },
    }


@pytest.fixture
def bcc_app(jp_serverapp: Any) -> NotebookBccApp:
    """The NotebookBccApp instance the test server loaded."""
    apps = jp_serverapp.extension_manager.extension_apps["notebook_bcc"]
    assert len(apps) == 1
    app = next(iter(apps))
    assert isinstance(app, NotebookBccApp)
    return app


@pytest.fixture
def root(jp_root_dir: Path) -> Path:
    """The server root with the test blueprints in ``blueprints/``."""
    shutil.copytree(SERVER_FIXTURES, jp_root_dir / "blueprints")
    return jp_root_dir


@pytest.fixture
def housing(root: Path) -> Path:
    """The housing example (blueprint and data) copied under the root as ``housing/``."""
    source = EXAMPLES / "housing"
    target = root / "housing"
    target.mkdir()
    shutil.copy(source / "workflow.yaml", target / "workflow.yaml")
    shutil.copytree(source / "data", target / "data")
    return target


class ApiError(Exception):
    """An error answer: its status and JSON body."""

    def __init__(self, code: int, body: dict[str, Any]) -> None:
        super().__init__(f"{code}: {body}")
        self.code = code
        self.body = body


class Api:
    """Calls ``{base_url}notebook-bcc/api/...`` and decodes the JSON answers."""

    def __init__(self, fetch: Fetch) -> None:
        self.fetch = fetch

    async def call(
        self,
        method: str,
        *parts: str,
        body: Any = None,
        raw: bytes | None = None,
        params: dict[str, str] | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """``(status, decoded body)``; error answers are returned, not raised."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        if method in ("POST", "PUT") and data is None:
            data = b""
        response = await self.fetch(
            "notebook-bcc",
            "api",
            *parts,
            method=method,
            body=data,
            params=params,
            headers=headers,
            follow_redirects=False,
            raise_error=False,
        )
        assert response.code != 599, response.error
        assert response.headers["Content-Type"].startswith("application/json"), response.body
        return response.code, json.loads(response.body) if response.body else None

    async def ok(self, method: str, *parts: str, **kwargs: Any) -> Any:
        """The body of a 2xx answer (anything else raises :class:`ApiError`)."""
        code, body = await self.call(method, *parts, **kwargs)
        if code >= 300:
            raise ApiError(code, body)
        return body

    async def start(self, notebook: str, blueprint: str, **extra: Any) -> dict[str, Any]:
        """POST a blueprint workflow; returns its first snapshot."""
        body = {
            "notebook_path": notebook,
            "planner": {"kind": "blueprint", "path": blueprint},
            **extra,
        }
        code, snapshot = await self.call("POST", "workflows", body=body)
        if code != 201:
            raise ApiError(code, snapshot)
        return dict(snapshot)

    async def snapshot(self, workflow_id: str) -> dict[str, Any]:
        """GET the snapshot."""
        return dict(await self.ok("GET", "workflows", workflow_id))

    async def wait(
        self,
        workflow_id: str,
        until: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 60.0,
    ) -> dict[str, Any]:
        """Poll the snapshot until ``until(snapshot)`` holds."""
        deadline = monotonic() + timeout
        while True:
            snapshot = await self.snapshot(workflow_id)
            if until(snapshot):
                return snapshot
            if monotonic() > deadline:
                raise AssertionError(
                    f"timed out; last run block: {snapshot['run']}; "
                    f"fsm {snapshot['fsm']['state']}; version {snapshot['version']}"
                )
            await asyncio.sleep(0.05)

    async def wait_status(self, workflow_id: str, *statuses: str, **kw: Any) -> dict[str, Any]:
        """Poll until the run status is one of ``statuses``."""
        return await self.wait(workflow_id, lambda s: s["run"]["status"] in statuses, **kw)

    async def command(self, workflow_id: str, **command: Any) -> tuple[int, Any]:
        """POST a D3 command."""
        return await self.call("POST", "workflows", workflow_id, "commands", body=command)


@pytest.fixture
def api(jp_fetch: Fetch) -> Api:
    """The notebook-bcc API of the test server, with the test token."""
    return Api(jp_fetch)


def read_notebook(path: Path) -> dict[str, Any]:
    """A notebook file's JSON."""
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


async def read_stream(
    ws: WebSocketClientConnection,
    until: Callable[[dict[str, Any]], bool] | None = None,
    *,
    timeout: float = 60,
) -> list[dict[str, Any]]:
    """A workflow stream's messages, an array of events (one commit's, or those queued while
    the client read) counted as each of its events: until one satisfies ``until`` (that one
    included; the stream must not close before), or with no ``until`` until the server
    closes the socket."""
    messages: list[dict[str, Any]] = []
    while True:
        text = await asyncio.wait_for(ws.read_message(), timeout=timeout)
        if text is None:
            assert until is None, f"the stream closed early after {messages[-3:]}"
            ws.close()
            return messages
        decoded = json.loads(text)
        for message in decoded if isinstance(decoded, list) else [decoded]:
            messages.append(message)
            if until is not None and until(message):
                return messages
