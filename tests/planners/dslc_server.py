"""A scripted DSLC server for tests: tornado on 127.0.0.1, in its own thread and event loop.

Each ``POST`` is recorded (:class:`Received`) and answered by a responder that returns a
:class:`Scripted` response: status, headers, body chunks with pauses, or misbehaviour (close
without answering, stop sending, close in the middle of the body). :class:`DslcResponder`
plays a small workflow from the payload files in ``tests/fixtures/dslc/``, chosen by endpoint,
FSM state and current stage, as a real DSLC server would from the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import tornado.httpserver
import tornado.netutil
import tornado.web
from tornado.iostream import StreamClosedError

from notebook_bcc.testing.scripted_dslc import CONTENT_TYPES, payload_file, request_names
from tests.conftest import FIXTURES

DSLC = FIXTURES / "dslc"


@dataclass
class Received:
    """One request the server got."""

    path: str
    headers: dict[str, str]
    body: Any

    @property
    def state(self) -> str | None:
        """``state.FSM.state`` of the request (the reference shape, D21)."""
        fsm = (self.body.get("state") or {}).get("FSM") or {}
        return fsm.get("state")

    @property
    def stage(self) -> str | None:
        """``observation.location.current.stage_id`` of the request."""
        current = ((self.body.get("observation") or {}).get("location") or {}).get("current")
        return (current or {}).get("stage_id")


@dataclass
class Scripted:
    """One scripted answer (see the module docstring)."""

    chunks: list[str | bytes] = field(default_factory=list)
    status: int = 200
    content_type: str | None = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    pause: float = 0.0
    """Seconds between two chunks."""
    hang: float | None = None
    """After the chunks, stay silent this long before finishing (an idle stream)."""
    truncate: bool = False
    """Close the connection after the chunks, before the body's end."""
    content_length: int | None = None
    """A Content-Length to declare (a truncated fixed-length body)."""
    disconnect: bool = False
    """Close the connection without any answer."""
    gate: threading.Event | None = None
    """Wait (up to 5 s) for this event after the first chunk; ``gate_timed_out`` records it."""
    gate_timed_out: bool | None = None

    @classmethod
    def text(cls, body: str, content_type: str | None = "application/json", **kw: Any) -> Scripted:
        """A whole body at once."""
        return cls(chunks=[body], content_type=content_type, **kw)

    @classmethod
    def file(cls, path: Path) -> Scripted:
        """A payload file, its Content-Type from its suffix."""
        return cls.text(path.read_text(encoding="utf-8"), CONTENT_TYPES[path.suffix])


Responder = Callable[[Received], Scripted]


class _Handler(tornado.web.RequestHandler):
    def initialize(self, server: ScriptedServer) -> None:
        self.server = server

    async def post(self, path: str) -> None:
        try:
            body = json.loads(self.request.body or b"null")
        except ValueError:
            body = None
        received = Received("/" + path, dict(self.request.headers), body)
        self.server.received.append(received)
        if self.server.down_when is not None and self.server.down_when(received):
            self.server.down_when = None
            self.server.go_down_now()
            self._drop()
            return
        script = self.server.respond(received)
        if script.disconnect:
            self._drop()
            return
        self.set_status(script.status)
        if script.content_type is None:
            self.clear_header("Content-Type")
        else:
            self.set_header("Content-Type", script.content_type)
        for name, value in script.headers.items():
            self.set_header(name, value)
        if script.content_length is not None:
            self.set_header("Content-Length", str(script.content_length))
        try:
            await self._send(script)
        except StreamClosedError:
            self._finished = True

    async def _send(self, script: Scripted) -> None:
        streamed = len(script.chunks) > 1 or script.truncate or script.hang is not None
        for index, chunk in enumerate(script.chunks):
            self.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
            if streamed:
                await self.flush()
            if index == 0 and script.gate is not None:
                opened = await asyncio.to_thread(script.gate.wait, 5.0)
                script.gate_timed_out = not opened
            if script.pause and index < len(script.chunks) - 1:
                await self.server.nap(script.pause)
        if script.hang is not None:
            await self.server.nap(script.hang)
            if self.request.connection.stream is None or self.request.connection.stream.closed():
                self._finished = True
                return
        if script.truncate:
            self._drop()

    def _drop(self) -> None:
        self.request.connection.close()
        self._finished = True


class ScriptedServer:
    """The server (see the module docstring); use as a context manager."""

    def __init__(self, responder: Responder | None = None) -> None:
        self.responder = responder
        self.queue: list[Scripted] = []
        self.received: list[Received] = []
        self.down_when: Callable[[Received], bool] | None = None
        """When it returns True for a request: stop listening and drop every connection."""
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: tornado.httpserver.HTTPServer | None = None
        self._stopping: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._closing: list[asyncio.Future[None]] = []

    @property
    def url(self) -> str:
        """The server's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def respond(self, received: Received) -> Scripted:
        """The next queued answer, else the responder's."""
        if self.queue:
            return self.queue.pop(0)
        if self.responder is None:
            return Scripted.text("no scripted answer left", "text/plain", status=599)
        return self.responder(received)

    def script(self, *answers: Scripted) -> ScriptedServer:
        """Queue answers, played in order before the responder."""
        self.queue.extend(answers)
        return self

    async def nap(self, seconds: float) -> None:
        """Sleep, cut short when the server stops."""
        assert self._stopping is not None
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), seconds)

    # -- life cycle -----------------------------------------------------------------------

    def start(self) -> ScriptedServer:
        """Listen on a free loopback port, in a daemon thread."""
        self._thread = threading.Thread(target=self._main, name="dslc-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the scripted server did not start")
        return self

    def _main(self) -> None:
        asyncio.run(self._serve())

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._listen()
        self._ready.set()
        await self._stopping.wait()
        if self._server is not None:
            self._server.stop()
            await self._server.close_all_connections()
        if self._closing:
            await asyncio.gather(*self._closing)

    def _listen(self) -> None:
        app = tornado.web.Application([(r"/(.*)", _Handler, {"server": self})])
        sockets = tornado.netutil.bind_sockets(self.port, "127.0.0.1", family=socket.AF_INET)
        self.port = sockets[0].getsockname()[1]
        self._server = tornado.httpserver.HTTPServer(app)
        self._server.add_sockets(sockets)

    def go_down_now(self) -> None:
        """(Server thread) stop listening and close every open connection."""
        server, self._server = self._server, None
        if server is not None:
            server.stop()
            self._closing.append(asyncio.ensure_future(server.close_all_connections()))

    def go_down(self) -> None:
        """Stop listening and drop connections (from the test's thread)."""
        self._call(self.go_down_now)

    def come_back(self) -> None:
        """Listen again on the same port (from the test's thread)."""
        self._call(self._listen)

    def _call(self, function: Callable[[], None]) -> None:
        assert self._loop is not None
        done = threading.Event()

        def run() -> None:
            try:
                function()
            finally:
                done.set()

        self._loop.call_soon_threadsafe(run)
        if not done.wait(10):
            raise RuntimeError("the scripted server did not answer")

    def stop(self) -> None:
        """Stop the server and its thread."""
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def paths(self) -> list[str]:
        """The paths of the requests received, in order."""
        return [r.path for r in self.received]


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


class DslcResponder:
    """Plays the workflow in ``tests/fixtures/dslc/``: ``ENDPOINT.STATE[.STAGE].EXT`` files.

    The most specific file wins (with the stage, then without). A request nothing matches is
    answered 404, so a test sees where the script ended.
    """

    def __init__(self, folder: Path = DSLC) -> None:
        self.folder = folder

    def __call__(self, received: Received) -> Scripted:
        names = request_names(received.path.strip("/"), received.body)
        path = payload_file(self.folder, names)
        if path is not None:
            return Scripted.file(path)
        return Scripted.text(f"no script for {names[0]}", "text/plain", status=404)
