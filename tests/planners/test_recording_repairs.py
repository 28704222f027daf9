"""A recording lists what the parser repaired in each answer (issue 21)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from notebook_bcc.models.snapshot import new_snapshot
from notebook_bcc.planners.base import PlannerReply, PlannerRequest
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.planners.transcript import read_transcript
from notebook_bcc.protocol import parse_payload
from notebook_bcc.workflow import build_observation

BODY = (
    "<stages>\n"
    '  <stage id="load" title="Load">\n'
    "    <goal>Load rows where price < 5\n"
    '    <verified_artifacts><variable name="rows">the rows</variable></verified_artifacts>\n'
    "  </stage>\n"
    "</stages>"
)


class OneAnswer:
    """A planner that answers ``plan_stages`` with :data:`BODY`."""

    kind = "http"

    def settings(self) -> dict[str, Any]:
        return {}

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        return PlannerReply(parse_payload(BODY), BODY, "application/xml")


def test_each_repair_is_a_line_of_the_recorded_exchange(tmp_path: Path) -> None:
    snapshot = new_snapshot("w", "r", problem="prices")
    request = PlannerRequest("plan_stages", snapshot, build_observation(snapshot))
    recorder = RecordingPlanner(OneAnswer(), tmp_path / "rec")  # type: ignore[arg-type]
    reply = asyncio.run(recorder.plan_stages(request))
    (exchange,) = read_transcript(tmp_path / "rec").exchanges
    assert exchange.repairs == [
        "repaired line 3: <goal>: '<' kept as text",
        "repaired line 4: <goal>: <goal> from line 3 closed where its sibling "
        "<verified_artifacts> opens",
    ]
    assert exchange.body == reply.body
