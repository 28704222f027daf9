"""Commands are idempotent against the state they were sent for (issue 19 §3): ``pause`` then
``run`` while a decision waits never asks it twice, and a decision that is no longer pending is
a 409 carrying the current snapshot."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import Api


async def test_pause_then_run_while_waiting_keeps_one_decision_and_a_gone_one_is_409(
    api: Api, root: Path
) -> None:
    started = await api.start("review/pause.ipynb", "blueprints/confirm.yaml")
    workflow_id = started["workflow_id"]
    waiting = await api.wait_status(workflow_id, "waiting", "failed")
    (decision,) = waiting["run"]["pending"]

    code, paused = await api.command(
        workflow_id, action="pause", expected_version=waiting["version"]
    )
    assert code == 200, paused
    assert paused["run"]["status"] == "paused"
    assert [p["id"] for p in paused["run"]["pending"]] == [decision["id"]]

    code, resumed = await api.command(workflow_id, action="run", expected_version=paused["version"])
    assert code == 200, resumed
    assert resumed["run"]["status"] == "waiting", "run goes back to the decision, not past it"
    assert [p["id"] for p in resumed["run"]["pending"]] == [decision["id"]]

    code, again = await api.command(workflow_id, action="run", expected_version=resumed["version"])
    assert code == 200, again
    assert again["version"] == resumed["version"], "run while waiting changes nothing"

    code, answered = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=again["version"]
    )
    assert code == 200, answered
    done = await api.wait_status(workflow_id, "completed", "failed")
    assert done["run"]["status"] == "completed", done["run"]

    code, gone = await api.command(
        workflow_id, decide=decision["id"], decision="approve", expected_version=done["version"]
    )
    assert code == 409, gone
    assert gone["code"] == "decision_gone"
    assert gone["details"]["snapshot"]["version"] == done["version"]
    assert gone["details"]["pending"] == []

    trace = await api.ok("GET", "workflows", workflow_id, "trace")
    asked = [
        r
        for r in trace["trace"]
        if r["action"].startswith("create_contract:")
        and r["metadata"].get("action_type") == "confirmation"
    ]
    assert len(asked) == 1, "the stage confirmation was asked once"
