"""What the scripted servers' command lines share: loopback flags and waiting to be stopped."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from typing import Any


def add_loopback_arguments(parser: argparse.ArgumentParser) -> None:
    """``--host`` (127.0.0.1) and ``--port`` (0: any free port)."""
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="port (0: any free port)")


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
