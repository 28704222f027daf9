"""Races (issue 9 §2): concurrent clients get exactly one winner and a 409 for the other.

- The same decision, sent twice at once with the same ``expected_version``: one applies, the
  other is refused with the current snapshot (the engine checks the version again inside its
  lock). 100 trials on one workflow whose stage loops back to its confirmation on reject.
- Two ``POST /workflows`` for one notebook at once: one 201, one 409 (one active workflow per
  notebook: the service's per-notebook lock and the store's unique index).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.server.conftest import Api

TRIALS = 100


def _pending_gate(snapshot: dict[str, Any]) -> bool:
    run = snapshot["run"]
    return run["status"] != "running" and any(
        p["kind"] == "stage_confirmation" for p in run["pending"]
    )


def _pending_again(answered: str) -> Callable[[dict[str, Any]], bool]:
    def again(snapshot: dict[str, Any]) -> bool:
        pending = {p["id"] for p in snapshot["run"]["pending"]}
        return _pending_gate(snapshot) and answered not in pending

    return again


async def test_race_same_decision_twice_applies_once(api: Api, root: Path) -> None:
    started = await api.start(
        "race/gate.ipynb",
        "blueprints/race_gate.yaml",
        options={"max_hops": TRIALS * 2 + 10},
    )
    workflow_id = started["workflow_id"]
    snapshot = await api.wait(workflow_id, _pending_gate)
    seen: set[str] = set()
    for trial in range(TRIALS):
        assert snapshot["run"]["status"] == "waiting", (trial, snapshot["run"])
        (pending,) = snapshot["run"]["pending"]
        assert pending["id"] not in seen, "each trial answers a fresh decision"
        seen.add(pending["id"])
        version = snapshot["version"]
        command = {"decide": pending["id"], "decision": "reject", "expected_version": version}
        answers = await asyncio.gather(
            api.command(workflow_id, **command), api.command(workflow_id, **command)
        )
        codes = sorted(code for code, _ in answers)
        assert codes == [200, 409], (trial, answers)
        body = next(body for code, body in answers if code == 409)
        assert body["code"] == "conflict"
        current = body["details"]["snapshot"]
        assert current["version"] > version, "the 409 carries the snapshot after the winner"
        assert pending["id"] not in {p["id"] for p in current["run"]["pending"]}
        snapshot = await api.wait(workflow_id, _pending_again(pending["id"]))
    visits = snapshot["stage_machine"]["visits"]
    assert visits["gate"] == TRIALS + 1, "every trial applied exactly one reject"


async def test_race_two_creates_for_one_notebook(api: Api, root: Path) -> None:
    for trial in range(3):
        notebook = f"race/create-{trial}.ipynb"
        answers = await asyncio.gather(
            api.call(
                "POST",
                "workflows",
                body={
                    "notebook_path": notebook,
                    "planner": {"kind": "blueprint", "path": "blueprints/confirm.yaml"},
                },
            ),
            api.call(
                "POST",
                "workflows",
                body={
                    "notebook_path": notebook,
                    "planner": {"kind": "blueprint", "path": "blueprints/quick.yaml"},
                },
            ),
        )
        codes = sorted(code for code, _ in answers)
        assert codes == [201, 409], (trial, answers)
        winner = next(body for code, body in answers if code == 201)
        loser = next(body for code, body in answers if code == 409)
        assert loser["code"] == "conflict"
        assert loser["details"]["workflow_id"] == winner["workflow_id"]
        listing = await api.ok("GET", "workflows", params={"notebook_path": notebook})
        assert [row["workflow_id"] for row in listing["workflows"]] == [winner["workflow_id"]]
        await api.ok("DELETE", "workflows", winner["workflow_id"])
