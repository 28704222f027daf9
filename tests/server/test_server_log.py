"""The extension's module loggers write to the server's log, at the level the server is told
(``--NotebookBccApp.log_level``): a real ``jupyter server`` at DEBUG logs the co-editing
conversation (a merge plan and its acknowledgement), named by the module that logged it; at
the default level it does not."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.server.conftest import SERVER_FIXTURES
from tests.server.test_restart import JupyterServer

pytestmark = pytest.mark.timeout(180)

HOLDER = "browser-tab-log-0001"
NOTEBOOK = "logged.ipynb"


def _logged(server: JupyterServer, text: str, wait: float) -> bool:
    """Whether ``text`` is in the server's log within ``wait`` seconds."""
    deadline = time.monotonic() + wait
    while True:
        if text in server.tail(200_000):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def _merge_and_acknowledge(server: JupyterServer) -> str:
    """Hold the notebook, start a workflow on it, take its cells as a plan and acknowledge
    the plan; the plan's token."""
    held = {"holder": HOLDER, "paths": [NOTEBOOK]}
    assert server.api("POST", "documents", held)[0] == 200
    workflow_id = server.start(NOTEBOOK, "blueprints/confirm.yaml")["workflow_id"]
    server.wait_status(workflow_id, "waiting")
    body = {"holder": HOLDER, "path": NOTEBOOK, "cells": [], "document_modified": None}
    code, plan = server.api("POST", "documents/merge", body)
    assert code == 200, plan
    assert plan["ops"], plan
    ack = {"path": NOTEBOOK, "token": plan["token"], "saved": None}
    assert server.api("POST", "documents/ack", ack) == (200, {"acknowledged": True})
    return str(plan["token"])


@pytest.mark.parametrize("level", ["DEBUG", "INFO"])
def test_the_co_editing_conversation_is_in_the_servers_log_at_debug(
    tmp_path: Path, level: str
) -> None:
    root, home = tmp_path / "root", tmp_path / "home"
    root.mkdir()
    home.mkdir()
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    (root / NOTEBOOK).write_text(
        json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5})
    )
    server = JupyterServer(root, home, f"--NotebookBccApp.log_level={level}")
    try:
        server.wait_ready()
        token = _merge_and_acknowledge(server)
        planned = f"notebook_bcc.server.coedit_handlers] merge plan {token[:8]} for "
        saved = f"merge plan {token[:8]} of {NOTEBOOK} saved at None: acknowledged"
        if level == "DEBUG":
            assert _logged(server, planned, wait=10.0), server.tail()
            assert _logged(server, saved, wait=10.0), server.tail()
            plan_line = next(line for line in server.tail(200_000).splitlines() if planned in line)
            assert "insert 0 " in plan_line, plan_line
        else:
            # the acknowledgement answered, so its log line (had there been one) was written
            assert not _logged(server, f"merge plan {token[:8]}", wait=0.0), server.tail()
    finally:
        server.process.terminate()
        server.process.wait(timeout=60)
        server.log.close()
