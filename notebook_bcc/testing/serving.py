"""What the scripted servers' command lines share: loopback flags, a port that cannot be
bound said in one line, and waiting to be stopped."""

from __future__ import annotations

import argparse
import errno
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def _port(text: str) -> int:
    """A TCP port number, 0 to 65535 (argparse names the flag when it is not one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0 to 65535)")
    return value


def add_loopback_arguments(parser: argparse.ArgumentParser) -> None:
    """``--host`` (127.0.0.1) and ``--port`` (0: any free port)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=_port, default=0, help="port (0: any free port)")


def cannot_listen(host: str, port: int, exc: OSError) -> str:
    """The one line to print when a scripted server cannot listen on ``host:port``: the port
    and the cause (another process holds it, a privileged port, an unknown host), so a user
    sees what to change instead of a traceback from the socket layer."""
    if isinstance(exc, socket.gaierror):
        cause = f"the host {host!r} cannot be resolved ({exc.strerror or exc})"
    elif exc.errno == errno.EADDRINUSE:
        cause = (
            f"port {port} is already in use by another process (choose another --port, or "
            "--port 0 for any free one)"
        )
    elif exc.errno == errno.EACCES:
        cause = "permission denied (ports below 1024 need privileges; choose another --port)"
    elif exc.errno == errno.EADDRNOTAVAIL:
        cause = f"{host} is not an address of this machine (choose another --host)"
    else:
        cause = exc.strerror or str(exc)
    return f"error: cannot listen on {host} port {port}: {cause}"


def bind_or_explain(make: Callable[[], T], host: str, port: int) -> T | None:
    """``make()`` (a server that binds its socket when built), or None after printing
    :func:`cannot_listen` on stderr when the socket cannot be bound: the command then exits
    non-zero with that one line."""
    try:
        return make()
    except OSError as exc:
        print(cannot_listen(host, port, exc), file=sys.stderr, flush=True)
        return None


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def wait_until_stopped(done: threading.Event | None = None) -> None:
    """Block until Ctrl-C or SIGTERM (or ``done`` is set: then give the client a moment to
    read the last answer before the caller closes the socket)."""
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if done is not None:
            done.wait()
            time.sleep(0.2)
        else:
            while True:
                time.sleep(3600)
    except KeyboardInterrupt:
        pass
