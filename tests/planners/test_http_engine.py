"""Whole runs against the scripted DSLC server: completion, record/replay, outage and resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from notebook_bcc.models.names import State
from notebook_bcc.planners.http import HttpPlanner
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transcript import read_transcript
from notebook_bcc.store.sqlite import SqliteStore
from tests.planners.conftest import FolderRun, fast
from tests.planners.dslc_server import DSLC, DslcResponder, Received, Scripted, ScriptedServer

EXPECTED_SOURCES = [
    "## Load the data",
    "We read the submitted CSV.",
    "import csv\nwith open(user_submit_files[0]) as handle:\n"
    "    rows = list(csv.DictReader(handle))\nprint(len(rows))",
    "mean_price = sum(float(r['price']) for r in rows) / len(rows)\nprint(round(mean_price, 2))",
    "The mean price is printed above.",
]
"""The cells the scripted workflow writes (after the inputs cell)."""

EXPECTED_CALLS = [
    ("/planning", "IDLE", None),
    ("/planning", "STAGE_RUNNING", "explore"),
    ("/planning", "STEP_RUNNING", "explore"),
    ("/generating", "BEHAVIOR_RUNNING", "explore"),
    ("/reflecting", "BEHAVIOR_COMPLETED", "explore"),
    ("/reflecting", "STEP_COMPLETED", "explore"),
    ("/reflecting", "STAGE_COMPLETED", "explore"),
    ("/planning", "STAGE_RUNNING", "summarize"),
    ("/planning", "STEP_RUNNING", "summarize"),
    ("/generating", "BEHAVIOR_RUNNING", "summarize"),
    ("/reflecting", "BEHAVIOR_COMPLETED", "summarize"),
    ("/reflecting", "STEP_COMPLETED", "summarize"),
    ("/reflecting", "STAGE_COMPLETED", "summarize"),
]


class Run(FolderRun):
    """A headless run with this module's views of what it wrote."""

    def sources(self) -> list[str]:
        notebook = nbformat.read(self.notebook, as_version=4)
        return [cell.source for cell in notebook.cells[1:]]

    def trace(self) -> list[Any]:
        store = SqliteStore(self.state_db)
        try:
            (workflow_id,) = store.workflow_ids()
            return list(store.trace(workflow_id))
        finally:
            store.close()


def calls(server: ScriptedServer) -> list[tuple[str, str | None, str | None]]:
    return [(r.path, r.state, r.stage) for r in server.received]


def test_whole_workflow_then_the_recording_replayed_offline(tmp_path: Path) -> None:
    record = tmp_path / "record"
    live = Run(tmp_path / "live")
    with ScriptedServer(DslcResponder()) as server:
        planner = RecordingPlanner(HttpPlanner(fast(server.url)), record)
        result = live.start(planner)
        assert calls(server) == EXPECTED_CALLS
        feedback = [r.body.get("behavior_feedback") for r in server.received]
    assert result.exit_code == 0, result.snapshot.run
    assert result.snapshot.fsm.state is State.WORKFLOW_COMPLETED
    assert result.snapshot.variables["rows"] is not None
    assert live.sources() == EXPECTED_SOURCES
    assert [i for i, f in enumerate(feedback) if f] == [4, 10], "after each behavior's actions"
    assert feedback[4]["behavior_id"] == "load_rows"
    assert result.snapshot.planner.kind == "http"
    assert result.snapshot.planner.settings["record"] == str(record.resolve())

    transcript = read_transcript(record)
    assert transcript.header is not None
    assert transcript.header.problem == "Describe the house prices"
    assert (record / "inputs" / "prices.csv").read_bytes() == (DSLC / "prices.csv").read_bytes()
    points = [ex.point for ex in transcript.exchanges]
    assert len(points) == 13
    assert points[6] == "route_stage"
    assert points[-1] == "route_stage"
    generating = transcript.exchanges[3]
    assert (generating.fsm_state, generating.location["stage_id"]) == (
        "behavior_running",
        "explore",
    )
    assert generating.content_type == "application/x-ndjson"
    assert generating.body == (DSLC / "generating.BEHAVIOR_RUNNING.explore.ndjson").read_text()
    assert generating.payload is not None
    assert generating.payload["kind"] == "json-actions"
    assert len(generating.request_digest) == 64

    # The server is gone: the replay runs offline with the recorded inputs.
    replayer = ReplayPlanner(record)
    replay = Run(tmp_path / "replay")
    replayed = replay.start(replayer, problem=replayer.problem, files=replayer.files())
    assert replayed.exit_code == 0, replayed.snapshot.run
    assert replay.sources() == live.sources()
    assert replayer.position == 13
    assert replayed.snapshot.planner.kind == "replay"


def test_planner_down_at_stage_completed_fails_the_run_and_resume_completes(
    tmp_path: Path,
) -> None:
    run = Run(tmp_path)
    with ScriptedServer(DslcResponder()) as server:

        def at_first_stage_end(received: Received) -> bool:
            return received.state == "STAGE_COMPLETED" and received.stage == "explore"

        server.down_when = at_first_stage_end
        failed = run.start(HttpPlanner(fast(server.url, max_retries=2)))
        snap = failed.snapshot
        assert failed.exit_code == 1
        assert snap.run.status == "failed"
        assert snap.fsm.state is State.STAGE_COMPLETED, "D1: the FSM stays where it was"
        assert "stage routing" in (snap.run.reason or "")
        assert "after 3 attempts" in (snap.run.reason or "")
        store = SqliteStore(run.state_db)
        (workflow_id,) = store.workflow_ids()
        assert store.load(workflow_id).run.status == "failed", "a status to read"
        store.close()

        server.come_back()
        resumed = run.resume()
        assert resumed.exit_code == 0, resumed.snapshot.run
        assert resumed.snapshot.fsm.state is State.WORKFLOW_COMPLETED
        assert calls(server)[-7:] == EXPECTED_CALLS[-7:]
    assert run.sources() == EXPECTED_SOURCES


def test_planner_never_answering_still_leaves_a_status(tmp_path: Path) -> None:
    run = Run(tmp_path)
    with ScriptedServer(lambda r: Scripted.text("", "text/plain", status=503)) as server:
        result = run.start(HttpPlanner(fast(server.url, max_retries=1)))
    assert result.exit_code == 1
    store = SqliteStore(run.state_db)
    (workflow_id,) = store.workflow_ids()
    snap = store.load(workflow_id)
    store.close()
    assert snap.fsm.state is State.IDLE
    assert snap.run.status == "failed"
    assert "plan_stages: planner failed: POST" in (snap.run.reason or "")
    assert "HTTP 503" in (snap.run.reason or "")


def test_protocol_error_fails_the_workflow_and_keeps_the_body_in_the_trace(
    tmp_path: Path,
) -> None:
    garbage = "<html>upstream timed out</html>"
    dslc = DslcResponder()

    def respond(received: Received) -> Scripted:
        if received.path == "/generating":
            return Scripted.text(garbage, "text/html")
        return dslc(received)

    run = Run(tmp_path)
    with ScriptedServer(respond) as server:
        result = run.start(HttpPlanner(fast(server.url)))
        assert [r.path for r in server.received].count("/generating") == 1, "not retried"
    assert result.exit_code == 1
    assert result.snapshot.fsm.state is State.ERROR
    assert result.snapshot.fsm.history[-1].from_state is State.BEHAVIOR_RUNNING
    assert "generate_actions: the planner's reply is malformed" in (
        result.snapshot.run.reason or ""
    )
    (record,) = [t for t in run.trace() if t.action == "protocol_error:generate_actions"]
    assert record.actor == "planner"
    assert record.metadata["body"] == garbage
    assert record.metadata["content_type"] == "text/html"


def test_fallback_completes_the_step_unverified_and_the_run_goes_on(tmp_path: Path) -> None:
    dslc = DslcResponder()

    def respond(received: Received) -> Scripted:
        if received.state == "BEHAVIOR_COMPLETED" and received.stage == "explore":
            return Scripted.text('{"error": "overloaded"}', status=503)
        return dslc(received)

    run = Run(tmp_path)
    with ScriptedServer(respond) as server:
        result = run.start(HttpPlanner(fast(server.url, max_retries=1)))
        reflecting = [c for c in calls(server) if c[1] == "BEHAVIOR_COMPLETED"]
        (stage_reflection,) = [
            r for r in server.received if (r.state, r.stage) == ("STEP_COMPLETED", "explore")
        ]
    assert result.exit_code == 0, result.snapshot.run
    assert reflecting == [("/reflecting", "BEHAVIOR_COMPLETED", "explore")] * 2 + [
        ("/reflecting", "BEHAVIOR_COMPLETED", "summarize")
    ]
    assert run.sources() == EXPECTED_SOURCES
    history = [(h.from_state, h.event.value) for h in result.snapshot.fsm.history]
    assert (State.BEHAVIOR_COMPLETED, "COMPLETE_STEP") in history
    steps = stage_reflection.body["observation"]["location"]["progress"]["steps"]
    assert steps["current"]["step_id"] == "load"
    assert steps["current"]["completion_status"] == "unverified", "D17 fallback"
    # the summary and `status` say so, not only `status --json` and the exchange log
    from notebook_bcc.cli.views import summary_lines

    (said,) = [line for line in summary_lines(result.snapshot, None) if "unverified" in line]
    assert said.startswith("unverified: 1 step(s) completed without the planner's check")
    assert said.endswith(": explore/load; `notebook-bcc trace --exchanges` says why")


@pytest.mark.parametrize("case", ["lower"])
def test_state_case_reaches_a_whole_run(tmp_path: Path, case: str) -> None:
    lowered: list[str | None] = []

    def respond(received: Received) -> Scripted:
        lowered.append(received.state)
        upper = Received(
            received.path,
            received.headers,
            {
                **received.body,
                "state": {
                    **received.body["state"],
                    "FSM": {
                        **received.body["state"]["FSM"],
                        "state": (received.state or "").upper(),
                    },
                },
            },
        )
        return DslcResponder()(upper)

    run = Run(tmp_path)
    with ScriptedServer(respond) as server:
        result = run.start(HttpPlanner(fast(server.url, state_case=case)))
    assert result.exit_code == 0, result.snapshot.run
    assert lowered[0] == "idle"
    assert all(s == (s or "").lower() for s in lowered)
