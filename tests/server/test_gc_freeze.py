"""``freeze_gc_at_start``: a real ``jupyter server`` moves what it holds once started out of
the garbage collector's reach (``make bench-server``: a full collection of a server running
20 workflows held its event loop about 0.1 s every few seconds before, about 0.02 s after,
which was most of the snapshot GET p99), and a server configured off leaves the collector as
the interpreter has it."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.server.test_restart import JupyterServer

FROZE = re.compile(rb"notebook_bcc: (\d+) objects of the started server moved out of the")


def _froze(server: JupyterServer, *, wait: float) -> int | None:
    """The objects the server logged it froze (None when it logged nothing in ``wait`` s)."""
    deadline = time.monotonic() + wait
    while True:
        server.log.flush()
        found = FROZE.search(server.log_path.read_bytes())
        if found is not None or time.monotonic() > deadline:
            return None if found is None else int(found.group(1))
        time.sleep(0.05)


def _started(tmp_path: Path, name: str, *args: str) -> JupyterServer:
    root = tmp_path / name
    root.mkdir()
    server = JupyterServer(root, tmp_path / f"{name}-home", *args, name=name)
    server.wait_ready()
    return server


def _stop(server: JupyterServer) -> None:
    server.process.terminate()
    server.process.wait(timeout=60)
    server.log.close()


@pytest.mark.parametrize("setting", [(), ("--NotebookBccApp.freeze_gc_at_start=False",)])
def test_a_started_server_freezes_what_it_holds_unless_configured_off(
    tmp_path: Path, setting: tuple[str, ...]
) -> None:
    (tmp_path / f"{len(setting)}-home").mkdir()
    server = _started(tmp_path, str(len(setting)), *setting)
    try:
        assert server.api("GET", "workflows")[0] == 200  # the extension has started
        if setting:
            assert _froze(server, wait=1.0) is None, server.tail()
        else:
            froze = _froze(server, wait=30.0)
            # jupyter_server, tornado, pydantic and the extension's modules: far more than a
            # handful of objects (a freeze before the server had loaded would count few)
            assert froze is not None, server.tail()
            assert froze > 50_000
    finally:
        _stop(server)
