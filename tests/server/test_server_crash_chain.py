"""The server crash suite's CI mode (issue 19): ONE workflow killed at >= 20 successive points.

``tests/server/test_server_crash.py`` kills a fresh run at one point per test (two server starts
and a whole run each: every point in slow mode). Here one run of the same workflow (state in
prep, an irreversible export whose side effect is one line in ``exports.log``, a stage
confirmation, a last cell that needs the earlier state) is SIGKILLed at a point, restarted on a
server whose defaults differ from the workflow's options, driven by a human answering
decisions (in doubt: by the side effect; a lost irreversible state: continue without) until
the next point kills it, and so on: one server start per point. The points cover every cell's
start, outcome and aftermath (commit hooks), the export held before and after its side effect,
and the run waiting at each kind of decision (irreversible confirmation, in doubt, stage
confirmation, lost state). After every restart at most one kernel runs (the dead server's is
ended); at the end: the export ran exactly once, the notebook's cells are the blueprint's,
the workflow's options were never replaced by a server default, ``trace --verify`` passes and
no kernel outlives the servers.
"""

from __future__ import annotations

import threading
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import requires
from tests.server.conftest import SERVER_FIXTURES
from tests.server.test_restart import JUPYTER_SERVER, JupyterServer
from tests.server.test_server_crash import (
    BLUEPRINT,
    KERNEL_SPEC,
    NOTEBOOK,
    OPTIONS,
    ORPHAN_SPEC,
    SECOND_DEFAULTS,
    Place,
    _answer,
    _kernel_processes,
)

pytestmark = [
    requires(JUPYTER_SERVER.exists(), "jupyter-server not found"),
    pytest.mark.timeout(900),
]


@dataclass(frozen=True)
class Step:
    """One kill: ``commit`` (``NOTEBOOK_BCC_CRASH_AT``, counted in the new server),
    ``hold`` (the export held ``before`` / ``after`` its side effect) or ``decision``
    (killed while that kind of decision is pending, before anyone answers it)."""

    how: str
    where: str

    def __str__(self) -> str:
        return f"{self.how}-{self.where}"


CELL = [
    Step("commit", "after:1:contract_running"),
    Step("commit", "before:1:contract_terminal"),
    Step("commit", "after:1:contract_terminal"),
]
"""Kill as the next cell starts, before its outcome is committed, and just after it."""

CHAIN = [
    Step("commit", "before:1:contract_running"),  # the workflow exists, nothing ran
    *CELL,  # the inputs cell
    *CELL,  # base = 40
    *CELL,  # rows = [...]
    Step("decision", "irreversible_confirmation"),
    Step("commit", "after:1:contract_running"),  # the export written ahead, not yet sent
    Step("hold", "before"),  # in the export, before its side effect
    Step("hold", "after"),  # in the export, after its side effect
    Step("decision", "in_doubt"),
    Step("decision", "lost_state"),  # "it ran", on a kernel now gone: its state is lost
    Step("decision", "stage_confirmation"),
    *CELL,  # answer = base + 2
    Step("commit", "after:1:transition"),
]
"""The points in the order the run reaches them (each one after the previous restart)."""


def _expected_codes() -> list[str]:
    """The blueprint's code actions, in order: the cells after the inputs cell."""
    data = yaml.safe_load((SERVER_FIXTURES / Path(BLUEPRINT).name).read_text())
    codes = []
    for state in data["states"].values():
        for step in state["steps"]:
            for behavior in step["behaviors"]:
                codes += [action["code"] for action in behavior["actions"]]
    return codes


def _until_dead(server: JupyterServer, place: Place, workflow_id: str, step: Step) -> bool:
    """Drive ``server`` (a human answering) until it dies at ``step``; False if the run
    completed first."""
    deadline = time.monotonic() + 120
    answering: threading.Thread | None = None
    failures: list[BaseException] = []
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return True
        if step.how == "hold":
            started = (place.work / "export.started").exists()
            appended = (place.work / "export.appended").exists()
            if started and (step.where == "before" or appended):
                server.process.kill()
                server.process.wait()
                return True
        try:
            snap = server.snapshot(workflow_id)
        except (urllib.error.URLError, ConnectionError, AssertionError):
            continue
        status = snap["run"]["status"]
        pending = snap["run"]["pending"]
        if step.how == "decision" and pending and pending[0]["kind"] == step.where:
            server.process.kill()
            server.process.wait()
            return True
        if status == "completed":
            return False
        assert status not in ("failed", "cancelled"), (step, snap["run"], server.tail())
        if status == "waiting" and pending and (answering is None or not answering.is_alive()):
            # in a thread: approving an in-doubt export runs it inside the command, which
            # then only returns when the cell does (or never, when this step holds it)
            answering = threading.Thread(
                target=_answer_quietly, args=(server, place, snap, failures)
            )
            answering.start()
        assert not failures, failures
        time.sleep(0.05)
    raise AssertionError(f"the server never died at {step}\n{server.tail()}")


def _answer_quietly(
    server: JupyterServer, place: Place, snap: dict[str, Any], failures: list[BaseException]
) -> None:
    """:func:`_answer`; a server killed under the command is not a failure."""
    try:
        _answer(server, place, snap)
    except (urllib.error.URLError, ConnectionError, OSError):
        pass
    except AssertionError as exc:
        if server.process.poll() is None:
            failures.append(exc)


def _recovered(server: JupyterServer, workflow_id: str) -> bool:
    """Wait until ``server`` drives the workflow again; False when it died first."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.relaunched():
            continue  # it lost its port before it bound it: nothing of the run happened
        if server.process.poll() is not None:
            return False
        try:
            code, listing = server.api("GET", "workflows")
        except (urllib.error.URLError, ConnectionError, OSError):
            time.sleep(0.1)
            continue
        rows = listing.get("workflows", []) if code == 200 else []
        if any(r["workflow_id"] == workflow_id and r["live"] for r in rows):
            return True
        time.sleep(0.1)
    raise AssertionError(f"{workflow_id} was not recovered\n{server.tail()}")


def _server(
    place: Place, step: Step | None, monkeypatch: pytest.MonkeyPatch, n: int
) -> JupyterServer:
    for marker in ("export.started", "export.appended"):
        (place.work / marker).unlink(missing_ok=True)
    # hold.txt is removed only once this server is live (below): a dead server's
    # kernel held in the export must not go on before this server has ended it
    if step is not None and step.how == "hold":
        (place.work / "hold.txt").write_text(step.where)
    if step is not None and step.how == "commit":
        monkeypatch.setenv("NOTEBOOK_BCC_CRASH_AT", step.where)
    args = [KERNEL_SPEC] if n == 0 else SECOND_DEFAULTS
    server = place.server(*args, name=f"s{n:02d}")
    monkeypatch.delenv("NOTEBOOK_BCC_CRASH_AT", raising=False)
    return server


def test_one_run_killed_at_every_point_in_turn_runs_the_export_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    began = time.monotonic()
    place = Place(tmp_path)
    runtime = place.home / "runtime"
    killed: list[str] = []
    servers: list[JupyterServer] = []
    workflow_id = ""
    first_kernel = None
    for n, step in enumerate(CHAIN):
        server = _server(place, step, monkeypatch, n)
        servers.append(server)
        try:
            if n == 0:
                server.wait_ready()
                started = server.start(NOTEBOOK, BLUEPRINT, options=OPTIONS)
                workflow_id = started["workflow_id"]
                first_kernel = started["kernel"]["pid"]
                died = _until_dead(server, place, workflow_id, step)
            elif not _recovered(server, workflow_id):
                died = True  # killed while it recovered (a commit of the recovery itself)
            else:
                live = _kernel_processes(runtime)
                assert len(live) <= 1, f"after {killed[-1]}: one kernel, not {live}"
                if step.how != "hold":
                    (place.work / "hold.txt").unlink(missing_ok=True)
                died = _until_dead(server, place, workflow_id, step)
        finally:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
            server.log.close()
        if not died:
            break
        assert server.process.returncode == -9, f"{step}: SIGKILLed\n{server.tail()}"
        killed.append(str(step))

    last = _server(place, None, monkeypatch, len(CHAIN))
    servers.append(last)
    try:
        assert _recovered(last, workflow_id), last.tail()
        assert first_kernel not in _kernel_processes(runtime)
        (place.work / "hold.txt").unlink(missing_ok=True)
        deadline = time.monotonic() + 120
        while True:
            snap = last.snapshot(workflow_id)
            if snap["run"]["status"] == "completed":
                break
            assert snap["run"]["status"] not in ("failed", "cancelled"), snap["run"]
            assert time.monotonic() < deadline, last.tail()
            if snap["run"]["status"] == "waiting" and snap["run"]["pending"]:
                _answer(last, place, snap)
            time.sleep(0.05)
        code, trace = last.api("GET", f"workflows/{workflow_id}/trace")
        assert code == 200, trace
    finally:
        last.stop()

    elapsed = time.monotonic() - began
    print(f"crash chain: {len(killed)} kills, {len(servers)} server starts, {elapsed:.1f} s")
    assert len(killed) >= 20, f"only {len(killed)} kill points reached: {killed}"
    assert place.exports() == ["exported 2"], f"the export ran exactly once ({killed})"
    sources = place.sources()
    assert sources[0].startswith("# notebook-bcc inputs"), sources[0]
    assert [s.rstrip("\n") for s in sources[1:]] == [c.rstrip("\n") for c in _expected_codes()]
    assert {key: snap["options"][key] for key in OPTIONS} == OPTIONS
    assert snap["options"]["kernel_name"] == ORPHAN_SPEC
    assert "auto-confirm" not in {r["actor"] for r in trace["trace"]}
    verified = place.verify()
    assert verified.returncode == 0, verified.stderr
    assert _kernel_processes(runtime) == [], "no kernel outlives the servers"
    for server in servers:
        assert server.tracebacks() == [], server.tail()
