"""Request bodies are bounded before they are buffered (issue 19 §4), on a real
``jupyter server`` process spoken to over a raw socket: a 50 MB declared body is refused at
once (413, typed JSON) and the server's memory does not grow by it; a chunked body is refused
as it crosses the cap; bodies within the cap (by length or chunked) are answered as before."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.server.limits import MAX_BODY_BYTES
from tests.conftest import requires
from tests.server.test_restart import JUPYTER_SERVER, TOKEN, JupyterServer
from tests.server.test_server_crash import Place

pytestmark = [
    requires(JUPYTER_SERVER.exists(), "jupyter-server not found"),
    pytest.mark.timeout(300),
]

HUGE = 50 * 1024 * 1024
PIECE = b" " * 65536


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """One server for the module (a start costs seconds)."""
    place = Place(tmp_path_factory.mktemp("body"))
    started = place.server(name="body")
    try:
        started.wait_ready()
        yield started
    finally:
        started.stop()


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _read_response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 response with a Content-Length body (or up to the close)."""
    data = b""
    while b"\r\n\r\n" not in data:
        piece = sock.recv(65536)
        assert piece, f"closed before a response: {data!r}"
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    length = int(headers.get("content-length", "-1"))
    while length < 0 or len(body) < length:
        piece = sock.recv(65536)
        if not piece:
            break
        body += piece
    return status, headers, body


def _open(server: JupyterServer, method: str, path: str, headers: dict[str, str]) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    lines = [f"{method} /notebook-bcc/api/{path} HTTP/1.1", f"Host: 127.0.0.1:{server.port}"]
    lines += [f"{k}: {v}" for k, v in {"Content-Type": "application/json", **headers}.items()]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    return sock


def _send(sock: socket.socket, total: int, *, chunked: bool) -> int:
    """Send up to ``total`` body bytes until the server stops reading; bytes sent."""
    sent = 0
    sock.settimeout(5)
    try:
        while sent < total:
            if chunked:
                sock.sendall(f"{len(PIECE):x}\r\n".encode() + PIECE + b"\r\n")
            else:
                sock.sendall(PIECE)
            sent += len(PIECE)
    except (BrokenPipeError, ConnectionResetError, TimeoutError):
        pass
    return sent


def _request(
    server: JupyterServer, method: str, path: str, body: bytes, *, chunked: bool = False
) -> tuple[int, Any]:
    headers = {"Authorization": f"token {TOKEN}", "Connection": "close"}
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    else:
        headers["Content-Length"] = str(len(body))
    with _open(server, method, path, headers) as sock:
        if chunked:
            for start in range(0, len(body), 65536):
                part = body[start : start + 65536]
                sock.sendall(f"{len(part):x}\r\n".encode() + part + b"\r\n")
            sock.sendall(b"0\r\n\r\n")
        else:
            sock.sendall(body)
        status, _, raw = _read_response(sock)
    return status, json.loads(raw) if raw else None


def test_a_50_mb_declared_body_is_refused_before_it_is_read(server: JupyterServer) -> None:
    pid = server.process.pid
    before = _rss_kb(pid)
    headers = {"Authorization": f"token {TOKEN}", "Content-Length": str(HUGE)}
    began = time.monotonic()
    with _open(server, "POST", "workflows", headers) as sock:
        status, found, raw = _read_response(sock)  # answered before a body byte is sent
        answered = time.monotonic() - began
        sent = _send(sock, HUGE, chunked=False)
    assert status == 413, raw
    assert found["content-type"].startswith("application/json")
    error = json.loads(raw)
    assert error["code"] == "body_too_large"
    assert error["details"] == {"limit": MAX_BODY_BYTES, "size": HUGE}
    assert answered < 10, f"answered in {answered:.1f} s"
    assert sent < HUGE, "the server closed the connection instead of reading the body"
    grown = _rss_kb(pid) - before
    assert grown < 10_000, f"the server's RSS grew by {grown} KB for a refused body"


def test_a_chunked_body_over_the_cap_is_refused_as_it_crosses(server: JupyterServer) -> None:
    pid = server.process.pid
    before = _rss_kb(pid)
    headers = {"Authorization": f"token {TOKEN}", "Transfer-Encoding": "chunked"}
    with _open(server, "POST", "workflows", headers) as sock:
        sent = _send(sock, 20 * MAX_BODY_BYTES, chunked=True)
        status, _, raw = _read_response(sock)
    assert status == 413, raw
    error = json.loads(raw)
    assert error["code"] == "body_too_large"
    assert error["details"]["chunked"] is True
    assert MAX_BODY_BYTES < error["details"]["size"] <= MAX_BODY_BYTES + len(PIECE)
    assert sent < 20 * MAX_BODY_BYTES
    assert _rss_kb(pid) - before < 10_000


def test_an_unauthenticated_oversized_body_is_403_at_once(server: JupyterServer) -> None:
    with _open(server, "POST", "workflows", {"Content-Length": str(HUGE)}) as sock:
        status, _, raw = _read_response(sock)
    assert status == 403, raw
    assert "body_too_large" not in raw.decode(), "nothing is revealed without a token"


@pytest.mark.parametrize("chunked", [False, True], ids=["length", "chunked"])
def test_bodies_within_the_cap_are_answered_as_before(server: JupyterServer, chunked: bool) -> None:
    # exactly the cap: parsed and validated (not 413)
    padded = b"{}" + b" " * (MAX_BODY_BYTES - 2)
    status, error = _request(server, "POST", "workflows", padded, chunked=chunked)
    assert status == 400, error
    assert error["code"] == "bad_request"
    assert "notebook_path" in error["message"]
    deep = b"[" * 40 + b"]" * 40
    status, error = _request(server, "POST", "workflows", deep, chunked=chunked)
    assert (status, error["code"]) == (400, "json_too_deep")
    body = {"notebook_path": "work/ok.ipynb", "planner": {"kind": "blueprint", "path": "nope.yaml"}}
    status, error = _request(
        server, "POST", "workflows", json.dumps(body).encode(), chunked=chunked
    )
    assert status == 400, error
    assert "nope.yaml" in error["message"]
    status, listed = _request(server, "GET", "workflows", b"", chunked=chunked)
    assert status == 200, listed
