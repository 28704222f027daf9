"""A scripted DSLC planning server: plays a workflow from a folder of payload files.

Each ``POST /planning``, ``/generating`` or ``/reflecting`` is answered with the file named
``ENDPOINT.STATE[.STAGE].EXT`` in the folder: the endpoint, the request's FSM state
(``state.FSM.state``, upper case) and its current stage (``observation.location.current.
stage_id``); the most specific file wins (with the stage, then without), its Content-Type from
the suffix (``.xml``, ``.json``, ``.ndjson``). A request no file matches is answered 404
naming the file it looked for, so a run against it fails saying where the script ended.

It is what the README's DSLC journey runs against when no DSLC server is at hand::

    python -m notebook_bcc.testing.scripted_dslc tests/fixtures/dslc &
    notebook-bcc run --planner http --planner-url http://127.0.0.1:PORT ...

The tests' own scripted server (with misbehaviours: pauses, truncation, disconnects) picks
its payloads with :func:`payload_file` too.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from notebook_bcc.testing.serving import (
    add_loopback_arguments,
    bind_or_explain,
    wait_until_stopped,
)

CONTENT_TYPES = {
    ".xml": "application/xml",
    ".json": "application/json",
    ".ndjson": "application/x-ndjson",
}
"""Payload file suffix -> the Content-Type it is served with."""

ENDPOINTS = ("planning", "generating", "reflecting")

MAX_REQUEST_BYTES = 16 * 1024 * 1024
"""Largest request body read (a planner's observation is well under this)."""


def request_names(endpoint: str, body: Any) -> list[str]:
    """The payload file names (without suffix) a request may be answered with, most specific
    first: ``ENDPOINT.STATE.STAGE`` then ``ENDPOINT.STATE``."""
    body = body if isinstance(body, dict) else {}
    fsm = (body.get("state") or {}).get("FSM") or {}
    state = str(fsm.get("state") or "NONE").upper()
    current = ((body.get("observation") or {}).get("location") or {}).get("current") or {}
    stage = current.get("stage_id")
    names = [f"{endpoint}.{state}.{stage}"] if stage else []
    return [*names, f"{endpoint}.{state}"]


def payload_file(folder: Path, names: Sequence[str]) -> Path | None:
    """The first payload file in ``folder`` for ``names`` (any known suffix), or None."""
    for name in names:
        for suffix in CONTENT_TYPES:
            path = folder / f"{name}{suffix}"
            if path.is_file():
                return path
    return None


class ScriptedDslcServer:
    """The server on a loopback port, in a daemon thread (see the module docstring)."""

    def __init__(self, folder: Path, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.folder = folder
        self.served = 0
        self.missing: list[str] = []
        """The payload names of requests no file answered."""
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The base URL to give ``--planner-url``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def answer(self, endpoint: str, body: Any) -> tuple[int, str, bytes]:
        """Status, Content-Type and body for one request."""
        names = request_names(endpoint, body)
        path = payload_file(self.folder, names)
        with self._lock:
            if path is None:
                self.missing.append(names[0])
            else:
                self.served += 1
        if path is None:
            text = f"no script for {names[0]} (nor {names[-1]}) in {self.folder}"
            return 404, "text/plain; charset=utf-8", text.encode("utf-8")
        return 200, CONTENT_TYPES[path.suffix], path.read_bytes()

    def start(self) -> ScriptedDslcServer:
        """Serve in a daemon thread."""
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="scripted-dslc", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(5)


def _handler_for(server: ScriptedDslcServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            endpoint = self.path.split("?", 1)[0].strip("/")
            length = int(self.headers.get("Content-Length") or 0)
            if endpoint not in ENDPOINTS or not 0 <= length <= MAX_REQUEST_BYTES:
                self._send(404, "text/plain; charset=utf-8", b"no such endpoint")
                return
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                self._send(400, "text/plain; charset=utf-8", b"the request is not JSON")
                return
            status, content_type, payload = server.answer(endpoint, body)
            self._send(status, content_type, payload)

        def _send(self, status: int, content_type: str, payload: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            print(f"scripted DSLC: {format % args}", file=sys.stderr, flush=True)

    return Handler


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m notebook_bcc.testing.scripted_dslc DIR``: serve a folder of payloads."""
    parser = argparse.ArgumentParser(
        prog="python -m notebook_bcc.testing.scripted_dslc",
        description="Serve a folder of DSLC payload files (ENDPOINT.STATE[.STAGE].xml|json|"
        "ndjson) as a DSLC planning server on loopback.",
    )
    parser.add_argument("folder", type=Path, help="folder of payload files")
    add_loopback_arguments(parser)
    args = parser.parse_args(argv)
    names = sorted(
        p.name for p in args.folder.glob("*") if p.suffix in CONTENT_TYPES and p.is_file()
    )
    if not args.folder.is_dir() or not names:
        print(
            f"error: {args.folder}: no payload files (ENDPOINT.STATE[.STAGE].EXT)", file=sys.stderr
        )
        return 2
    server = bind_or_explain(
        lambda: ScriptedDslcServer(args.folder, host=args.host, port=args.port),
        args.host,
        args.port,
    )
    if server is None:
        return 2
    server.start()
    print(f"scripted DSLC: {len(names)} payloads from {args.folder}; URL {server.url}", flush=True)
    try:
        wait_until_stopped()
    finally:
        server.stop()
    print(
        f"scripted DSLC: served {server.served} request(s); "
        f"{len(server.missing)} had no payload"
        + (f" (first {server.missing[0]})" if server.missing else ""),
        file=sys.stderr,
        flush=True,
    )
    return 1 if server.missing else 0


if __name__ == "__main__":
    sys.exit(main())
