"""A planner request builds its observation only when a planner reads it, and once.

The observation (D21) costs a few milliseconds a turn on a long run; a blueprint planner
answers from its YAML and never reads it, so a blueprint run must not build it at all, while
an AI planner (and the exchange log, the recorder) must see the one built for the turn.
"""

from __future__ import annotations

from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.base import PlannerRequest
from notebook_bcc.workflow.observation import build_observation


def test_the_observation_is_built_at_the_first_read_and_only_once() -> None:
    snapshot = WorkflowSnapshot(workflow_id="wf-000000000001", run_id="run-1")
    built: list[int] = []

    def observe() -> dict[str, object]:
        built.append(1)
        return build_observation(snapshot)

    request = PlannerRequest("plan_stages", snapshot, observe)
    assert built == []
    first = request.observation
    assert request.observation is first
    assert built == [1]
    assert first == build_observation(snapshot)
    # a ready observation is taken as it is
    given = {"state": {}}
    assert PlannerRequest("plan_stages", snapshot, given).observation is given
