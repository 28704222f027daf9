"""Read-only answers of the workflow service: snapshots, lists, trace, diagrams, feeds."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.planners.capabilities import StageMachinePlanner
from notebook_bcc.server.contents import (
    notebook_api_path,
)
from notebook_bcc.server.errors import (
    BadRequestError,
)
from notebook_bcc.server.live import LiveWorkflow
from notebook_bcc.server.models import (
    DiagramDocument,
    PlannerList,
    TraceDocument,
    WorkflowList,
    WorkflowSummary,
)
from notebook_bcc.server.planner_specs import PlannerSpecs
from notebook_bcc.server.service_core import ServiceCore
from notebook_bcc.server.stream import EventFeed
from notebook_bcc.store.errors import CorruptSnapshotError

log = logging.getLogger(__name__)

STOP_WRITE_WAIT = 10.0
"""How long a snapshot read waits for the run's final notebook write once the run stopped:
a client that sees "completed" (or waiting, paused, failed) then finds the file written. A
write takes milliseconds; the bound keeps a hung save from hanging reads."""


class QueryRoom(ServiceCore):
    """Answers from the live engines, else from the store (never blocking the loop)."""

    planners: PlannerSpecs

    def activity(self) -> list[dict[str, Any]]:
        """The workflows whose run loop executes now (the server's idle check reads this)."""
        return [
            {
                "workflow_id": live.workflow_id,
                "notebook_path": live.notebook_path,
                "run_status": live.engine.snapshot.run.status,
            }
            for live in self._live.values()
            if live.running
        ]

    def live_workflows(self) -> list[LiveWorkflow]:
        """The workflows engines drive in this server now."""
        return list(self._live.values())

    def live(self, workflow_id: str) -> LiveWorkflow | None:
        """The live workflow with this id, if an engine drives it here."""
        return self._live.get(workflow_id)

    async def snapshot(self, workflow_id: str) -> WorkflowSnapshot:
        """The current snapshot (the engine's for a live workflow, else the stored one)."""
        live = self._live.get(workflow_id)
        if live is not None:
            await live.engine.stop_published(STOP_WRITE_WAIT)
            return live.engine.snapshot
        store = await self.start()
        return await store.load(workflow_id)

    async def snapshot_text(self, workflow_id: str) -> str:
        """The current snapshot as JSON text; a live one's is serialised once per version."""
        live = self._live.get(workflow_id)
        if live is not None:
            await live.engine.stop_published(STOP_WRITE_WAIT)
            return self.snapshot_texts.text(live.engine.snapshot)
        return (await self.snapshot(workflow_id)).model_dump_json(by_alias=True)

    async def list_workflows(self, notebook_path: str | None = None) -> WorkflowList:
        """Every workflow in the store, oldest first, optionally for one notebook."""
        store = await self.start()
        path = notebook_api_path(notebook_path) if notebook_path is not None else None

        live_ids = set(self._live)

        def read(s: Any) -> tuple[list[tuple[str, WorkflowSnapshot | None]], dict[str, str]]:
            ids = s.workflow_ids(notebook_path=path)
            released: dict[str, str] = s.released(notebook_path=path)
            found: list[tuple[str, WorkflowSnapshot | None]] = []
            for workflow_id in ids:
                if workflow_id in live_ids:  # its engine's snapshot is the current one
                    found.append((workflow_id, None))
                    continue
                try:
                    found.append((workflow_id, s.load(workflow_id)))
                except CorruptSnapshotError as exc:  # one damaged row does not hide the others
                    log.warning("notebook-bcc: workflow list: %s", exc.message)
            return found, released

        found, released = await store.call(read)
        rows = []
        for workflow_id, stored in found:
            live = self._live.get(workflow_id)
            if live is not None:
                snap = live.engine.snapshot
            elif stored is not None:
                snap = stored
            else:  # stopped being live while the list was read
                snap = await store.load(workflow_id)
            rows.append(
                WorkflowSummary(
                    workflow_id=snap.workflow_id,
                    notebook_path=snap.notebook_path,
                    version=snap.version,
                    state=snap.fsm.state.value,
                    run_status=snap.run.status,
                    reason=snap.run.reason,
                    pending=len(snap.run.pending),
                    active=workflow_id not in released,
                    released=released.get(workflow_id),
                    live=live is not None,
                    running=live is not None and live.running,
                    recovering=live is None and workflow_id in self._recovering,
                    kernel_id=live.kernel.kernel_id if live is not None else None,
                    not_recovered=self.refused.get(workflow_id),
                    last_activity=max(
                        (t for t in (snap.fsm.timestamp, snap.run.since) if t), default=None
                    ),
                )
            )
        return WorkflowList(workflows=rows)

    def planner_kinds(self) -> PlannerList:
        """Every planner kind, whether this server runs it and why not, with its defaults."""
        return self.planners.kinds()

    async def trace(self, workflow_id: str) -> TraceDocument:
        """The full FSM history and execution trace from the store."""
        store = await self.start()
        await store.load(workflow_id)
        history = await store.call(lambda s: s.history(workflow_id))
        trace = await store.call(lambda s: s.trace(workflow_id))
        return TraceDocument(workflow_id=workflow_id, history=history, trace=trace)

    async def diagram(self, workflow_id: str, machine: str) -> DiagramDocument:
        """Mermaid for the 14-state FSM or the stage machine, the current state marked."""
        from notebook_bcc.blueprint.diagram import rule_machine_mermaid
        from notebook_bcc.fsm.mermaid import state_diagram, workflow_fsm_mermaid

        if machine not in ("fsm", "stages"):
            raise BadRequestError(
                f"machine: expected 'fsm' or 'stages', got {machine!r}",
                details={"machine": machine},
            )
        snap = await self.snapshot(workflow_id)
        if machine == "fsm":
            state = snap.fsm.state.value
            return DiagramDocument(
                workflow_id=workflow_id,
                machine="fsm",
                current=state,
                mermaid=workflow_fsm_mermaid(state),
            )
        stages = snap.location.progress.stages
        current = snap.stage_machine.current_state or (
            stages.current.id if stages.current is not None else None
        )
        live = self._live.get(workflow_id)
        planner = live.engine.planner if live is not None else None
        if isinstance(planner, StageMachinePlanner):
            text = rule_machine_mermaid(planner.machine, current)
        else:
            order = [
                *(item.id for item in stages.completed),
                *([stages.current.id] if stages.current is not None else []),
                *(item.id for item in stages.remaining),
            ]
            names = list(dict.fromkeys(order))
            edges = [(a, "", b) for a, b in itertools.pairwise(names)]
            text = state_diagram(
                names,
                edges,
                start=names[0] if names else None,
                ends=names[-1:],
                current=current if current in names else None,
            )
        return DiagramDocument(
            workflow_id=workflow_id, machine="stages", current=current, mermaid=text
        )

    async def open_feed(self, workflow_id: str) -> tuple[EventFeed, Callable[[], None]]:
        """A client's event feed and the function that releases it.

        For a workflow no engine drives here, the feed holds the stored snapshot and ends.
        One this server is still recovering after a restart is waited for first: its feed is
        the live one (a panel then never shows it "not running here" while its kernel is
        rebuilt, with every control disabled).
        """
        await self.start()  # a first request after a restart: the recoveries are known then
        await self._recovered(workflow_id)
        live = self._live.get(workflow_id)
        if live is not None:
            feed = live.hub.open()
            hub = live.hub
            return feed, lambda: hub.release(feed)
        store = await self.start()
        stored = await store.load(workflow_id)
        feed = EventFeed(self.settings.stream_buffer, lambda: stored)
        feed.close(stored)
        return feed, feed.close
