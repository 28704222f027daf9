"""Restart recovery (issue 9 §1): two ``jupyter server`` processes, one after the other, over
one store. The first is stopped with SIGTERM in the middle of a run; the second recovers what
it left per ``restart_policy`` (D1, D7, D10, D11).

:class:`JupyterServer` (a real server subprocess and a tiny blocking client) is shared with the
gateway test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.client import HTTPException
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.store.errors import ChainBrokenError
from notebook_bcc.store.sqlite import SqliteStore
from tests.conftest import FIXTURES, collaboration_off, requires, run_cli
from tests.server.conftest import SERVER_FIXTURES, read_notebook

BIN = Path(sys.executable).parent
JUPYTER_SERVER = BIN / "jupyter-server"
TOKEN = "notebook-bcc-restart-token"

pytestmark = requires(JUPYTER_SERVER.exists(), "jupyter-server not found")


def free_port() -> int:
    """A loopback port nobody listens on right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def http(method: str, url: str, body: Any = None, *, token: str | None = TOKEN) -> tuple[int, Any]:
    """A JSON request; error answers are returned, not raised."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"token {token}"
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
    except HTTPException as exc:
        # not an HTTP server on the port (a kernel's ZMQ socket answers 0xFF): not connected
        raise ConnectionError(f"no HTTP answer from {url}: {exc!r}") from exc


class JupyterServer:
    """A ``jupyter server`` subprocess (loopback, token auth, notebook_bcc enabled by its
    jupyter-config file) and a blocking client for the notebook-bcc API."""

    def __init__(self, root: Path, home: Path, *args: str, name: str = "server") -> None:
        self.log_path = home / f"{name}.log"
        self.log = self.log_path.open("wb")
        collaboration_off(home / "config")
        self._root = root
        self._args = args
        # the environment as it is now: a relaunch (below) starts the same server
        self._env = {
            **os.environ,
            "JUPYTER_CONFIG_DIR": str(home / "config"),
            "JUPYTER_DATA_DIR": str(home / "data"),
            "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        }
        self._launch()

    def _launch(self) -> None:
        self.log.flush()
        self._log_from = self.log_path.stat().st_size  # this launch's part of the log
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [
                str(JUPYTER_SERVER),
                "--no-browser",
                "--allow-root",
                "--ip=127.0.0.1",
                f"--port={self.port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={self._root}",
                "--NotebookBccApp.write_debounce=0.1",
                *self._args,
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env=self._env,
            cwd=self._root,
        )

    def relaunched(self) -> bool:
        """Start the server again on another port when it exited because another process
        took its port first (:func:`free_port`'s race: a kernel's socket, say); True then."""
        if self.process.poll() is None or self.log.closed:
            return False
        self.log.flush()
        with self.log_path.open("rb") as log:
            log.seek(self._log_from)
            if PORT_TAKEN.encode() not in log.read():
                return False
        self.log.write(b"\n[test harness] port taken by another process: started again\n")
        self._launch()
        return True

    def request(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """A request to ``path`` under the server's base URL."""
        return http(method, self.base + path, body)

    def api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """A request to the notebook-bcc API."""
        return self.request(method, "notebook-bcc/api/" + path, body)

    def wait_ready(self, timeout: float = 60) -> None:
        """Wait until ``/api/status`` answers."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.relaunched():
                assert self.process.poll() is None, self.tail()
            try:
                if self.request("GET", "api/status")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError):
                pass
            time.sleep(0.1)
        raise AssertionError("jupyter server did not answer in time\n" + self.tail())

    def start(self, notebook: str, blueprint: str, **extra: Any) -> dict[str, Any]:
        """POST a blueprint workflow; its first snapshot."""
        body = {"notebook_path": notebook, "planner": {"kind": "blueprint", "path": blueprint}}
        code, snapshot = self.api("POST", "workflows", {**body, **extra})
        assert code == 201, snapshot
        return dict(snapshot)

    def snapshot(self, workflow_id: str) -> dict[str, Any]:
        """GET a snapshot."""
        code, snapshot = self.api("GET", f"workflows/{workflow_id}")
        assert code == 200, snapshot
        return dict(snapshot)

    def wait(
        self,
        workflow_id: str,
        until: Callable[[dict[str, Any]], bool],
        *,
        timeout: float = 60,
    ) -> dict[str, Any]:
        """Poll the snapshot until ``until(snapshot)`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            snapshot = self.snapshot(workflow_id)
            if until(snapshot):
                return snapshot
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"timed out on {workflow_id}: run {snapshot['run']}, "
                    f"fsm {snapshot['fsm']['state']}\n{self.tail()}"
                )
            time.sleep(0.1)

    def wait_status(self, workflow_id: str, *statuses: str, timeout: float = 60) -> dict[str, Any]:
        """Poll until the run status is one of ``statuses``."""
        return self.wait(workflow_id, lambda s: s["run"]["status"] in statuses, timeout=timeout)

    def row(self, workflow_id: str) -> dict[str, Any]:
        """The workflow's line of ``GET /workflows``."""
        code, listing = self.api("GET", "workflows")
        assert code == 200, listing
        return next(r for r in listing["workflows"] if r["workflow_id"] == workflow_id)

    def wait_live(self, workflow_id: str, timeout: float = 60) -> dict[str, Any]:
        """Poll ``GET /workflows`` until an engine drives the workflow here (recovered)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            row = self.row(workflow_id)
            if row["live"]:
                return row
            time.sleep(0.1)
        raise AssertionError(f"{workflow_id} was not recovered\n{self.tail()}")

    def command(self, workflow_id: str, **command: Any) -> tuple[int, Any]:
        """POST a D3 command."""
        return self.api("POST", f"workflows/{workflow_id}/commands", command)

    def stop(self, timeout: float = 30) -> int | None:
        """SIGTERM, then wait; a server that does not stop is killed (None)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
                self.log.close()
                return None
        self.log.close()
        return self.process.returncode

    def tail(self, chars: int = 4000) -> str:
        """The end of the server's log."""
        if not self.log.closed:
            self.log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def tracebacks(self) -> list[str]:
        """The tracebacks in the server's log (its kernels' stderr included), each from its
        first line on, less :data:`KERNEL_PORT_RACE`'s."""
        text = KERNEL_PORT_RACE.sub("", self.log_path.read_text(errors="replace"))
        return [text[at.start() : at.start() + 3000] for at in re.finditer("Traceback", text)]


PORT_TAKEN = "could not be started because port"
"""What jupyter_server logs when it exits because its ``--port`` is taken (``port_retries=0``)."""

KERNEL_PORT_RACE = re.compile(
    r"Exception in thread Heartbeat:\nTraceback \(most recent call last\):\n"
    r"(?:(?!Traceback).*\n){0,40}?"
    r"zmq\.error\.ZMQError: Address already in use[^\n]*\n"
)
"""An upstream race, not this server's: jupyter_client picks a kernel's TCP ports by binding
port 0 and closing it, the kernel binds them a moment later, and any process on the machine
may take one in between (a connecting socket's ephemeral port, a kernel of another test). The
kernel's heartbeat thread then dies with this traceback on its stderr, which is this log; the
kernel runs on. Seen once in CI in the crash chain (22 servers and kernels started in turn)."""


def _root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    return root


def _load(store_path: Path, workflow_id: str) -> Any:
    store = SqliteStore(store_path)
    try:
        return store.load(workflow_id)
    finally:
        store.close()


def _stopped_after_a_cell(root: Path, tmp_path: Path, store: Path, config: list[str]) -> str:
    """A first server starts the slow chain, stores its first cell (``base = 40``, written
    before it runs), and is stopped (SIGTERM) mid-run; the workflow's id."""
    first = JupyterServer(root, tmp_path, *config, name="first")
    try:
        first.wait_ready()
        workflow_id = first.start("work/chain.ipynb", "blueprints/restart_slow.yaml")["workflow_id"]

        def stored() -> bool:
            with contextlib.closing(sqlite3.connect(store)) as conn:
                query = "SELECT 1 FROM cells WHERE cell LIKE '%base = 40%'"
                return conn.execute(query).fetchone() is not None

        first.wait(workflow_id, lambda _: stored())
    finally:
        assert first.stop() is not None
    return str(workflow_id)


def _sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in read_notebook(path)["cells"]]


def test_restart_resumes_an_interrupted_run_and_keeps_the_users_notebook_edits(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    store = tmp_path / "store.sqlite"
    config = [f"--NotebookBccApp.store_path={store}", "--NotebookBccApp.auto_confirm=True"]

    first = JupyterServer(root, tmp_path, *config, name="first")
    try:
        first.wait_ready()
        started = first.start("work/chain.ipynb", "blueprints/restart_slow.yaml")
        workflow_id = started["workflow_id"]
        first.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 1)
    finally:
        assert first.stop() is not None, "SIGTERM stopped the first server"
    left = _load(store, workflow_id)
    assert left.run.status == "interrupted", left.run
    assert left.fsm.state.value != "workflow_completed"

    notebook = root / "work" / "chain.ipynb"
    nb = read_notebook(notebook)
    written = len(nb["cells"])
    user_cell = {"cell_type": "markdown", "id": "by-user", "metadata": {}, "source": "mine"}
    nb["cells"].insert(0, user_cell)
    notebook.write_text(json.dumps(nb))  # edited while no server runs

    second = JupyterServer(
        root, tmp_path, *config, "--NotebookBccApp.restart_policy=resume", name="second"
    )
    try:
        second.wait_ready()
        done = second.wait_status(workflow_id, "completed", "failed", "waiting")
        assert done["run"]["status"] == "completed", done["run"]
        assert done["acceptance"], "the last cell read the rebuilt kernel's variables"
        row = second.row(workflow_id)
        assert row["live"]
        assert not row["active"], "a completed run releases its notebook"
    finally:
        assert second.stop() is not None
    sources = _sources(notebook)
    assert sources[0] == "mine", "D10: the user's cell is kept where the user put it"
    assert len(sources) > written
    assert sources[-1] == "answer = middle + 1"
    assert sum(source == "answer = middle + 1" for source in sources) == 1
    for server in (first, second):
        assert server.tracebacks() == [], server.tail()


def test_restart_wait_policy_leaves_runs_waiting_and_never_reruns_an_action_in_doubt(
    tmp_path: Path,
) -> None:
    root = _root(tmp_path)
    store = tmp_path / "store.sqlite"
    config = [f"--NotebookBccApp.store_path={store}"]

    # stop_timeout 0.3: the running cells are cancelled at shutdown, their contracts RUNNING
    first = JupyterServer(root, tmp_path, *config, "--NotebookBccApp.stop_timeout=0.3")
    try:
        first.wait_ready()
        doubt = first.start(
            "doubt/send.ipynb",
            "blueprints/restart_in_doubt.yaml",
            options={"confirm_irreversible": False},
        )["workflow_id"]
        confirm = first.start("review/confirm.ipynb", "blueprints/confirm.yaml")["workflow_id"]
        slow = first.start("slow/chain.ipynb", "blueprints/restart_slow.yaml")["workflow_id"]
        waiting = first.wait_status(confirm, "waiting")
        (decision,) = waiting["run"]["pending"]
        assert decision["kind"] == "stage_confirmation"
        first.wait(doubt, lambda _: (root / "doubt" / "sent.log").exists())
        first.wait(slow, lambda s: s["notebook"]["execution_count"] >= 1)
    finally:
        assert first.stop() is not None
    assert (root / "doubt" / "sent.log").read_text() == "sent\n"

    second = JupyterServer(
        root,
        tmp_path,
        *config,
        "--NotebookBccApp.restart_policy=wait",
        "--NotebookBccApp.auto_confirm=True",
        name="second",
    )
    try:
        second.wait_ready()
        for workflow_id in (doubt, confirm, slow):
            second.wait_live(workflow_id)
        # the recovered notebook keeps its chain anchor (its first write dropped it)
        assert (
            "anchor" in read_notebook(root / "review" / "confirm.ipynb")["metadata"]["notebook_bcc"]
        )

        in_doubt = second.snapshot(doubt)
        assert in_doubt["run"]["status"] == "waiting"
        assert [p["kind"] for p in in_doubt["run"]["pending"]] == ["in_doubt"]
        kept = second.snapshot(confirm)
        assert kept["run"]["status"] == "waiting"
        assert [p["id"] for p in kept["run"]["pending"]] == [decision["id"]]
        paused = second.snapshot(slow)
        assert paused["run"]["status"] == "interrupted"
        assert "restart_policy" in (paused["run"]["reason"] or "")
        assert second.row(slow)["running"] is False, "policy wait: no run loop drives it"
        assert second.snapshot(slow)["version"] == paused["version"], "policy wait: no run"

        code, body = second.command(slow, action="run", expected_version=paused["version"])
        assert code == 200, body
        assert second.wait_status(slow, "completed", "failed")["run"]["status"] == "completed"
        code, body = second.command(
            confirm, decide=decision["id"], decision="approve", expected_version=kept["version"]
        )
        assert code == 200, body
        assert second.wait_status(confirm, "completed", "failed")["run"]["status"] == "completed"

        # D11: never re-run automatically; rejecting ("it did happen") does not repeat it
        (question,) = in_doubt["run"]["pending"]
        code, body = second.command(
            doubt, decide=question["id"], decision="reject", expected_version=in_doubt["version"]
        )
        assert code == 200, body
        second.wait(doubt, lambda s: s["run"]["status"] != "running" or not s["run"]["pending"])
    finally:
        assert second.stop() is not None
    assert (root / "doubt" / "sent.log").read_text() == "sent\n", "D7: run once, never again"


def test_a_restarted_server_does_not_recover_a_workflow_from_an_altered_store(
    tmp_path: Path,
) -> None:
    """Recovery replays the stored cells into a new kernel: a cell source edited in the state
    database while no server ran would run as if it were what the workflow ran. The next server
    verifies the store first and recovers nothing from it (as ``notebook-bcc resume`` refuses):
    the forged code never runs, a command names why, and the evidence stays."""
    root = _root(tmp_path)
    store = tmp_path / "store.sqlite"
    config = [f"--NotebookBccApp.store_path={store}", "--NotebookBccApp.auto_confirm=True"]
    workflow_id = _stopped_after_a_cell(root, tmp_path, store, config)
    with contextlib.closing(sqlite3.connect(store)) as conn:
        cell_id, text = conn.execute(
            "SELECT cell_id, cell FROM cells WHERE cell LIKE '%base = 40%'"
        ).fetchone()
        cell = json.loads(text)
        cell["source"] = 'open("FORGED", "w").write("x"); import time; base = 40'
        conn.execute("UPDATE cells SET cell = ? WHERE cell_id = ?", (json.dumps(cell), cell_id))
        conn.commit()
    notebook = root / "work" / "chain.ipynb"
    written = notebook.read_bytes()

    second = JupyterServer(
        root, tmp_path, *config, "--NotebookBccApp.restart_policy=resume", name="second"
    )
    try:
        second.wait_ready()
        code, body = second.command(workflow_id, action="run")
        assert code == 409, body
        assert body["details"]["reason"] == "altered", body
        assert "was altered after it was written" in body["message"], body
        assert "cells row" in body["message"], body
        row = second.row(workflow_id)
        assert not row["live"]
        # the list says why, in the words of the 409
        assert row["not_recovered"]["reason"] == "altered", row
        assert row["not_recovered"]["message"] in body["message"], row
        # nothing new is written into a store that can never verify again
        code, body = second.api(
            "POST",
            "workflows",
            {
                "notebook_path": "work/new.ipynb",
                "planner": {"kind": "blueprint", "path": "blueprints/restart_slow.yaml"},
            },
        )
        assert code == 409, body
        assert body["code"] == "store_altered", body
        assert "Move the file aside" in body["message"], body
    finally:
        assert second.stop() is not None
    assert not (root / "FORGED").exists(), "the forged cell ran"
    assert not (root / "work" / "FORGED").exists(), "the forged cell ran"
    assert notebook.read_bytes() == written, "nothing was written from the altered store"
    assert "not recovered" in second.log_path.read_text(errors="replace")
    checked = SqliteStore(store)
    try:
        with pytest.raises(ChainBrokenError):
            checked.verification()
    finally:
        checked.close()


def test_a_restarted_server_does_not_load_a_stored_blueprint_from_outside_its_root(
    tmp_path: Path,
) -> None:
    """The snapshot is not chained: a planner path edited in it to a blueprint outside the root
    (which no client of this server could name) is refused at recovery; its code never runs."""
    root = _root(tmp_path)
    store = tmp_path / "store.sqlite"
    outside = tmp_path / "outside"
    outside.mkdir()
    evil = outside / "evil.yaml"
    evil.write_text(
        (root / "blueprints" / "restart_slow.yaml")
        .read_text()
        .replace("base = 40", f"open({str(tmp_path / 'PWNED')!r}, 'w').write('x'); base = 40")
    )
    config = [f"--NotebookBccApp.store_path={store}", "--NotebookBccApp.auto_confirm=True"]
    workflow_id = _stopped_after_a_cell(root, tmp_path, store, config)
    with contextlib.closing(sqlite3.connect(store)) as conn:
        (body,) = conn.execute(
            "SELECT body FROM snapshot_parts WHERE workflow_id = ? AND part = 'planner'",
            (workflow_id,),
        ).fetchone()
        part = json.loads(body)
        part["planner"]["settings"]["path"] = str(evil)
        conn.execute(
            "UPDATE snapshot_parts SET body = ? WHERE workflow_id = ? AND part = 'planner'",
            (json.dumps(part), workflow_id),
        )
        conn.commit()
    second = JupyterServer(
        root, tmp_path, *config, "--NotebookBccApp.restart_policy=resume", name="second"
    )
    try:
        second.wait_ready()
        code, body = second.command(workflow_id, action="run")
        assert code == 409, body
        assert body["details"]["reason"] == "not_recovered", body
        assert "resolves outside the server root" in body["message"], body
        reason = second.row(workflow_id)["not_recovered"]
        assert reason["reason"] == "not_recovered", reason
        assert "resolves outside the server root" in reason["message"], reason
    finally:
        assert second.stop() is not None
    assert not (tmp_path / "PWNED").exists(), "the blueprint from outside the root ran"


def test_a_chain_rewritten_with_its_head_is_caught_by_the_anchor_the_notebook_keeps(
    tmp_path: Path,
) -> None:
    """The last events deleted and the chain head rewritten to match, while no server ran:
    the database alone verifies, but the notebook's anchor (written at its last flush) names
    rows that are gone, so the next server recovers nothing from the store."""
    root = _root(tmp_path)
    store = tmp_path / "store.sqlite"
    config = [f"--NotebookBccApp.store_path={store}"]
    first = JupyterServer(root, tmp_path, *config, name="first")
    try:
        first.wait_ready()
        workflow_id = first.start("review/confirm.ipynb", "blueprints/confirm.yaml")["workflow_id"]
        first.wait_status(workflow_id, "waiting")
        notebook = root / "review" / "confirm.ipynb"
        deadline = time.monotonic() + 30
        while "anchor" not in read_notebook(notebook)["metadata"].get("notebook_bcc", {}):
            assert time.monotonic() < deadline, "the waiting run's notebook has no anchor"
            time.sleep(0.1)
    finally:
        assert first.stop() is not None
    with contextlib.closing(sqlite3.connect(store)) as conn:
        (last,) = conn.execute("SELECT MAX(seq) FROM events").fetchone()
        conn.execute("DELETE FROM events WHERE seq > ?", (last - 3,))
        rows, seq, digest = conn.execute(
            "SELECT (SELECT COUNT(*) FROM events), seq, hash FROM events ORDER BY seq DESC"
        ).fetchone()
        conn.execute(
            "UPDATE chain_heads SET rows = ?, last_seq = ?, head_hash = ? WHERE chain = 'events'",
            (rows, seq, digest),
        )
        conn.commit()
    checked = SqliteStore(store)
    try:
        checked.verification()  # consistent: the database alone cannot tell
    finally:
        checked.close()
    second = JupyterServer(root, tmp_path, *config, name="second")
    try:
        second.wait_ready()
        code, body = second.command(workflow_id, action="run")
        assert code == 409, body
        assert body["details"]["reason"] == "altered", body
        assert "anchored rows were deleted" in body["message"], body
        assert "review/confirm.ipynb" in body["message"], body
    finally:
        assert second.stop() is not None


def test_a_notebook_run_first_against_another_database_does_not_stop_recovery(
    tmp_path: Path,
) -> None:
    """The notebook was run with the CLI first (its own --state-db), so it carries that
    database's anchor when the server starts a workflow on it. The server is killed before
    its first behavior ends (the file still holds the CLI's anchor): the next server
    recovers the workflow and finishes it -- another database's anchor is no evidence
    against this one."""
    root = _root(tmp_path)
    notebook = root / "work" / "analysis.ipynb"
    ran = run_cli(
        "run",
        FIXTURES / "engine" / "chain.yaml",
        *("--notebook", notebook, "--state-db", tmp_path / "cli.sqlite", "--auto-confirm"),
    )
    assert ran.returncode == 0, ran.stderr
    cli_anchor = read_notebook(notebook)["metadata"]["notebook_bcc"]["anchor"]
    store = tmp_path / "store.sqlite"
    config = [f"--NotebookBccApp.store_path={store}"]
    first = JupyterServer(root, tmp_path, *config, name="first")
    try:
        first.wait_ready()
        workflow_id = first.start("work/analysis.ipynb", "blueprints/slow.yaml")["workflow_id"]
        first.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 2)
    finally:
        first.process.kill()
        first.process.wait()
        first.log.close()
    assert read_notebook(notebook)["metadata"]["notebook_bcc"]["anchor"] == cli_anchor
    second = JupyterServer(root, tmp_path, *config, name="second")
    try:
        second.wait_ready()
        second.wait_live(workflow_id)
        done = second.wait_status(workflow_id, "completed", "failed", "paused")
        assert done["run"]["status"] == "completed", done["run"]
        mirrored = read_notebook(notebook)["metadata"]["notebook_bcc"]["anchor"]
        assert mirrored["workflow_id"] == workflow_id, "the notebook now mirrors this store"
    finally:
        assert second.stop() is not None
