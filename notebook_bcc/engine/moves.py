"""The client's moves at each FSM state (seed 003): ask the planner, apply, commit.

Each ``_at_<state>`` handler makes one move from its state; a planner turn that cannot go on
raises :class:`~notebook_bcc.engine.host.StepEnded` (the failure already committed).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from notebook_bcc.engine.commands import UPDATE_EVENTS
from notebook_bcc.engine.failure import failure_cause
from notebook_bcc.engine.routing import (
    count_stage_entry,
    end_workflow,
    enter_stage,
    fail_step,
    fire_event,
    with_run,
)
from notebook_bcc.fsm.expressions import WhenEvaluationError
from notebook_bcc.fsm.rules import HopCapExceeded
from notebook_bcc.models.names import Event
from notebook_bcc.models.snapshot import (
    AcceptanceResult,
    PlanItem,
    WorkflowSnapshot,
)
from notebook_bcc.planners.base import (
    PlannerError,
    PlannerRequest,
    StageRoute,
)
from notebook_bcc.store.anchor import put_anchor
from notebook_bcc.store.sqlite import EventDraft
from notebook_bcc.workflow import (
    Applied,
    navigate,
)
from notebook_bcc.workflow.context import propagate_produced
from notebook_bcc.workflow.effects import add_current
from notebook_bcc.workflow.result import Draft

if TYPE_CHECKING:
    from notebook_bcc.engine.host import EngineRooms

    _Rooms = EngineRooms
else:
    _Rooms = object

log = logging.getLogger(__name__)


class Moves(_Rooms):
    """The move at each FSM state (a room of :class:`~notebook_bcc.engine.engine.Engine`)."""

    snapshot: WorkflowSnapshot

    async def _at_idle(self) -> None:
        reply = await self.ask("plan_stages", self.planner.plan_stages)
        if reply is None:
            await self.fail_run("plan_stages: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        await self.entered_stage(applied)

    async def entered_stage(self, applied: Applied) -> None:
        """A stage was entered (START_WORKFLOW / NEXT_STAGE): count the hop (D16), commit."""
        snap = applied.snapshot
        stage = snap.location.progress.stages.current
        if stage is None:
            await self.commit_applied(applied, stage=True)
            return
        cap = self._hop_cap(snap)
        counted, verdict = count_stage_entry(snap, stage.id, cap)
        if isinstance(verdict, HopCapExceeded):
            failed = fire_event(snap, Event.FAIL, options=self.client_options())
            reason = verdict.error().message
            await self.commit(
                with_run(failed.snapshot, "failed", reason),
                records=[*applied.records, *failed.records],
                warnings=applied.warnings,
            )
            return
        visits = counted.stage_machine.visits[stage.id]
        current = stage.model_copy(update={"visits": visits})
        progress = counted.location.progress
        stages = progress.stages.model_copy(update={"current": current})
        location = counted.location.model_copy(
            update={"progress": progress.model_copy(update={"stages": stages})}
        )
        await self.commit_applied(
            applied, snapshot=counted.model_copy(update={"location": location}), stage=True
        )

    def _hop_cap(self, snapshot: WorkflowSnapshot) -> int:
        if self.options.max_hops:
            return self.options.max_hops
        if snapshot.stage_machine.max_hops:
            return snapshot.stage_machine.max_hops
        stages = snapshot.location.progress.stages
        total = len(stages.completed) + len(stages.remaining) + (1 if stages.current else 0)
        return 10 * max(total, 1)

    async def _at_stage_running(self) -> None:
        reply = await self.ask("plan_steps", self.planner.plan_steps)
        if reply is None:
            await self.fail_run("plan_steps: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        await self.commit_applied(applied, stage=True)

    def _step_gaps(self) -> list[str]:
        snap = self.snapshot
        step = snap.location.progress.steps.current
        if step is None:
            return []
        return [g.variable for g in snap.gaps if g.level == "step" and g.owner_id == step.id]

    async def _at_step_running(self) -> None:
        gaps = self._step_gaps()
        if gaps and getattr(self.planner, "fail_steps_on_gaps", False):
            step_id = self.snapshot.location.current.step_id
            failed = fail_step(
                self.snapshot,
                f"step {step_id} cannot start: required variable(s) missing: {', '.join(gaps)}",
                options=self.client_options(),
            )
            await self.commit_applied(failed)
            return
        reply = await self.ask("plan_behavior", self.planner.plan_behavior)
        if reply is None:
            await self.fail_run("plan_behavior: the planner gave no behavior at step_running")
            return
        applied = await self.apply_reply(reply)
        await self.commit_applied(applied, stage=True)

    async def _at_behavior_running(self) -> None:
        snap = self.snapshot
        if not snap.action_queue.actions and (snap.location.current.behavior_iteration or 0) > 1:
            replan = await self.ask("plan_behavior", self.planner.plan_behavior)
            if replan is not None:
                replanned = await self.apply_reply(replan)
                await self.commit_applied(replanned, stage=True)
        reply = await self.ask("generate_actions", self.planner.generate_actions)
        if reply is None:
            await self.fail_run("generate_actions: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        await self.commit_applied(applied, stage=True)

    async def _at_action_completed(self) -> None:
        snap = self.snapshot
        queue = snap.action_queue
        if queue.index < len(queue.actions):
            await self.commit_applied(navigate(snap, options=self.client_options()), stage=True)
            return
        snap = await self._behavior_checks(snap)
        applied = navigate(snap, options=self.client_options())
        await self.commit_applied(applied, kinds=frozenset({"behavior_end"}), stage=True)
        await self.flush_notebook(wait=False)

    async def flush_notebook(self, *, wait: bool = True) -> None:
        """Write the notebook, with the store's chain heads in its metadata.

        ``metadata.notebook_bcc.anchor`` mirrors the tamper-evidence anchor outside the
        database at every flush (``trace --verify --anchor`` reads the same document), so
        rows cut from the end of a chain are caught even if the chain heads are rewritten.
        At a behavior boundary (``wait=False``) the file is written in the background, off
        the run's path (the store already holds every cell, D10); the end of a run waits.
        """
        try:
            mirror = await self.store.call(lambda s: s.chain_anchor())
        except Exception as exc:  # an anchor is a mirror: never a reason not to write
            log.warning("notebook-bcc: no anchor for the notebook: %s", exc)
        else:
            put_anchor(self.runtime.document.nb.metadata, mirror, self.snapshot.workflow_id)
            self.runtime.writer.metadata_changed(self.runtime.document.nb.metadata)
        if wait:
            await self.runtime.flush()
        else:
            self.runtime.flush_soon()

    async def _behavior_checks(self, snap: WorkflowSnapshot) -> WorkflowSnapshot:
        """Variables probe and acceptance of the finished behavior (before its reflection)."""
        behavior = snap.location.progress.behaviors.current
        step = snap.location.progress.steps.current
        stage = snap.location.progress.stages.current
        wanted: list[str] = []
        if behavior is not None:
            wanted += list(behavior.outputs)
        if step is not None:
            wanted += list(step.verified_artifacts)
        if stage is not None:
            wanted += list(stage.verified_artifacts)
        criteria = list(behavior.acceptance) if behavior is not None else []
        report, results = await self.runtime.runner.behavior_checks(
            list(dict.fromkeys(wanted)), criteria
        )
        effects = snap.effects
        if report.error:
            effects = add_current(effects, [f"WARN: variables probe failed: {report.error}"])
            variables = dict(snap.variables)
        else:
            variables = {
                name: info for name, info in snap.variables.items() if info.source != "kernel"
            }
            variables.update(report.variables)
        acceptance = dict(snap.acceptance)
        if behavior is not None:
            acceptance[behavior.id] = results
        produced = [name for name, where in report.present.items() if where is not None]
        draft = Draft(snap, "probe", self.client_options())
        propagate_produced(draft, produced)
        snap = draft.snapshot
        metrics = snap.metrics.model_copy(update={"acceptance_pass_rate": _pass_rate(acceptance)})
        return snap.model_copy(
            update={
                "variables": variables,
                "acceptance": acceptance,
                "effects": effects,
                "metrics": metrics,
            }
        )

    def behavior_feedback(self) -> dict[str, Any]:
        """``behavior_feedback`` of PROTOCOL-NOTES for the behavior that just finished."""
        queue = self.snapshot.action_queue
        return {
            "behavior_id": queue.behavior_id,
            "actions_executed": queue.executed,
            "actions_succeeded": queue.succeeded,
            "sections_added": queue.sections_added,
            "last_action_result": queue.last_result,
        }

    def _iteration_cap(self) -> int:
        """D15 cap for the current behavior: its own ``max_iterations`` when it has one."""
        behaviors = self.snapshot.location.progress.behaviors
        current = behaviors.current
        own = None
        if current is not None:
            own = (current.extra.get("attrs") or {}).get("max_iterations")
        if own is None or not str(own).isdigit() or current is None:
            return self.options.max_iterations
        attempts = 1 + sum(1 for done in behaviors.completed if done.id == current.id)
        base = (behaviors.iteration or 1) - attempts
        return base + int(str(own))

    async def _at_behavior_completed(self) -> None:
        reply = await self.ask(
            "reflect_behavior", self.planner.reflect_behavior, feedback=self.behavior_feedback()
        )
        if reply is None:
            await self.fail_run("reflect_behavior: the planner gave no answer")
            return
        applied = await self.apply_reply(reply, max_iterations=self._iteration_cap())
        await self.actions.run_reply_actions(applied)

    async def _at_step_completed(self) -> None:
        snap = self.snapshot
        steps = snap.location.progress.steps
        stage = snap.location.progress.stages.current
        if not steps.remaining and stage is not None and stage.acceptance:
            key = f"stage:{stage.id}"
            results = await self.runtime.runner.acceptance(list(stage.acceptance))
            acceptance = {**snap.acceptance, key: results}
            self.snapshot = snap.model_copy(update={"acceptance": acceptance})
        reply = await self.ask("reflect_stage", self.planner.reflect_stage)
        if reply is None:
            await self.fail_run("reflect_stage: the planner gave no answer")
            return
        applied = await self.apply_reply(reply)
        await self.actions.run_reply_actions(applied)

    async def _at_stage_completed(self) -> None:
        decided = self.snapshot.stage_machine.decided
        request = PlannerRequest("route_stage", self.snapshot, {}, None)
        try:
            route = await self.planner.route_stage(request, decided=decided)
        except (WhenEvaluationError, PlannerError) as exc:
            await self.fail_run(f"stage routing: {exc.message}")
            return
        if decided is not None:
            machine = self.snapshot.stage_machine.model_copy(update={"decided": None})
            self.snapshot = self.snapshot.model_copy(update={"stage_machine": machine})
        await self.follow_route(route)

    async def follow_route(self, route: StageRoute) -> None:
        """Act on a stage route: confirm (pause), end, or enter the next stage."""
        snap = self.snapshot
        warnings = list(route.warnings)
        stage = snap.location.progress.stages.current
        stage_id = stage.id if stage is not None else "?"
        if route.outcome == "pause":
            await self.actions.ask_stage_confirmation(stage_id, route)
            return
        detail = {"stage": stage_id, "outcome": route.outcome, "rule": route.rule}
        if route.target is None:
            if route.failed:
                end = f" in end state {route.end_state!r}" if route.end_state else ""
                cause = await failure_cause(self)
                because = f": {cause}" if cause else ""
                machine = snap.stage_machine.model_copy(
                    update={"current_state": route.end_state or "failed"}
                )
                snap = snap.model_copy(update={"stage_machine": machine})
                await self.commit(
                    with_run(
                        snap,
                        "failed",
                        f"stage {stage_id} failed{because}; the workflow ended{end}",
                    ),
                    events=[
                        EventDraft("run", event="route", detail={**detail, "end": route.end_state})
                    ],
                    warnings=warnings,
                )
                return
            applied = end_workflow(snap, options=self.client_options())
            machine = applied.snapshot.stage_machine.model_copy(
                update={"current_state": route.end_state}
            )
            await self.commit_applied(
                applied,
                snapshot=applied.snapshot.model_copy(update={"stage_machine": machine}),
                events=[
                    EventDraft("run", event="route", detail={**detail, "end": route.end_state})
                ],
            )
            return
        item = self._stage_item(route.target)
        if item is None:
            await self.fail_run(f"stage routing: no stage {route.target!r} in the plan")
            return
        visits = snap.stage_machine.visits.get(item.id, 0) + 1
        applied = enter_stage(snap, item, visits=visits, options=self.client_options())
        applied = applied.model_copy(update={"warnings": [*applied.warnings, *warnings]})
        self.snapshot = snap
        await self.entered_stage(applied)

    def _stage_item(self, stage_id: str) -> PlanItem | None:
        progress = self.snapshot.location.progress.stages
        for item in [
            *progress.remaining,
            *progress.completed,
            *([progress.current] if progress.current else []),
        ]:
            if item.id == stage_id:
                return item
        maker = getattr(self.planner, "stage_item", None)
        if maker is not None:
            made: PlanItem = maker(stage_id)
            return made
        return None

    async def _at_error(self) -> None:
        reason = self.snapshot.run.reason or "the workflow is in error"
        await self.fail_run(reason)

    async def _at_update_pending(self) -> None:
        pending = [p for p in self.snapshot.run.pending if p.kind in UPDATE_EVENTS]
        if pending and self.options.auto_confirm:
            await self.decide(pending[0].id, "approve", actor="auto-confirm")
            return
        await self.commit(
            with_run(self.snapshot, "waiting", "waiting for a human to confirm an update")
        )


def _pass_rate(acceptance: dict[str, dict[str, AcceptanceResult]]) -> float | None:
    results = [r for group in acceptance.values() for r in group.values()]
    if not results:
        return None
    return round(sum(1 for r in results if r.status == "passed") / len(results), 4)
