"""A plain ``jupyter lab`` (no extension flags) serves the API, runs the housing blueprint to the
end, and shuts down cleanly on SIGTERM while a workflow runs."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from notebook_bcc.server.store_place import default_store_path
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import free_port, requires, token_request
from tests.server.conftest import EXAMPLES, SERVER_FIXTURES

JUPYTER_LAB = Path(sys.executable).parent / "jupyter-lab"
TOKEN = "notebook-bcc-test-token"


class Server:
    """A ``jupyter lab`` subprocess and a tiny client for it."""

    def __init__(self, root: Path, home: Path) -> None:
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.log = (home / "server.log").open("wb")
        env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        }
        self.process = subprocess.Popen(
            [
                str(JUPYTER_LAB),
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={root}",
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=root,
        )

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        return token_request(self.base, TOKEN, method, path, body)

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, "jupyter lab exited at start-up"
            try:
                if self.request("GET", "api/status")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.2)
        raise AssertionError("jupyter lab did not answer in time")

    def wait_for(self, workflow_id: str, *statuses: str, timeout: float = 90) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            code, snapshot = self.request("GET", f"notebook-bcc/api/workflows/{workflow_id}")
            assert code == 200, snapshot
            if snapshot["run"]["status"] in statuses:
                return dict(snapshot)
            time.sleep(0.2)
        raise AssertionError(f"workflow {workflow_id} did not reach {statuses}")

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                return None
        self.log.close()
        return self.process.returncode


THIRD_PARTY_SHUTDOWN = ("jupyter_server_ydoc/websocketserver.py", "pycrdt/websocket")
"""jupyter-collaboration (the ``collab`` extra) logs a traceback of its own at SIGTERM
("WebsocketServer not running" in its room cleaner); it is not ours and harms nothing."""


def _tracebacks_of_ours(log: str) -> list[str]:
    """The tracebacks in a server log, less jupyter-collaboration's own shutdown one."""
    found = []
    for block in log.split("Traceback (most recent call last):")[1:]:
        frames = block.split("\n[")[0]
        if not any(marker in frames for marker in THIRD_PARTY_SHUTDOWN):
            found.append(frames)
    return found


@requires(JUPYTER_LAB.exists(), "jupyter-lab is not installed here")
def test_plain_jupyter_lab_runs_the_housing_blueprint(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "housing").mkdir(parents=True)
    shutil.copy(EXAMPLES / "housing" / "workflow.yaml", root / "housing" / "workflow.yaml")
    shutil.copytree(EXAMPLES / "housing" / "data", root / "housing" / "data")
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    server = Server(root, tmp_path)
    try:
        server.wait_ready()
        code, fsm = server.request("GET", "notebook-bcc/api/fsm")
        assert code == 200, "the extension is enabled by its jupyter-config file alone"
        assert len(fsm["transitions"]) == 46  # seed 003's 45 and idle --CANCEL--> cancelled

        code, first = server.request(
            "POST",
            "notebook-bcc/api/workflows",
            {
                "notebook_path": "housing/housing.ipynb",
                "planner": {"kind": "blueprint", "path": "housing/workflow.yaml"},
                "options": {"auto_confirm": True},
            },
        )
        assert code == 201, first
        done = server.wait_for(first["workflow_id"], "completed", "failed", "waiting")
        assert done["run"]["status"] == "completed", done["run"]
        assert done["fsm"]["state"] == "workflow_completed"
        notebook = json.loads((root / "housing" / "housing.ipynb").read_text())
        assert len(notebook["cells"]) == 21

        code, slow = server.request(
            "POST",
            "notebook-bcc/api/workflows",
            {
                "notebook_path": "work/slow.ipynb",
                "planner": {"kind": "blueprint", "path": "blueprints/slow.yaml"},
            },
        )
        assert code == 201, slow
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            snapshot = server.request("GET", f"notebook-bcc/api/workflows/{slow['workflow_id']}")[1]
            if snapshot["notebook"]["execution_count"] >= 1:
                break
            time.sleep(0.1)
    finally:
        began = time.monotonic()
        returncode = server.stop()
    assert returncode is not None, "SIGTERM stopped jupyter lab"
    assert time.monotonic() - began < 20
    log = (tmp_path / "server.log").read_text(errors="replace")
    assert not _tracebacks_of_ours(log), log[-3000:]
    store = SqliteStore(default_store_path(tmp_path / "data", root))
    try:
        assert store.load(first["workflow_id"]).run.status == "completed"
        assert store.load(slow["workflow_id"]).run.status == "interrupted"
    finally:
        store.close()
