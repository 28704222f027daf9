"""The blueprint planner (D14): a YAML stage machine answering like an AI planner would.

It renders each answer as the wire payload an LLM would send (well-formed XML for plans and
reflections, JSON for actions) and parses it through the protocol layer, so the engine cannot
tell it from an AI planner and a blueprint run can be recorded and replayed like any other.

Decisions:
- stages: the blueprint's stages in file order from ``start_state`` (end states without
  steps are not stages);
- behaviors run in file order; a behavior whose acceptance fails is retried up to its
  ``max_iterations`` (the engine escalates the step as failed after that, D15);
- stage reflection: the next step while steps remain, else the stage completes (goal
  achieved when every step succeeded and the stage's acceptance passed);
- route: the stage's outcome (``success`` / ``failure``, or ``pause`` when it has ``confirm:``
  and no human answered yet) resolved by the seed 004 rules over the D13 namespace; no rule
  for a success -> the next stage in file order (none left -> the end); no rule for a failure
  (a rejected confirmation included) -> the workflow fails.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from lxml import etree

from notebook_bcc.blueprint.loader import LoadedBlueprint
from notebook_bcc.blueprint.models import ActionSpec, BehaviorSpec, Blueprint, StageSpec, StepSpec
from notebook_bcc.fsm.rules import RuleMachine, resolve, when_namespace
from notebook_bcc.models.snapshot import PlanItem, WorkflowSnapshot
from notebook_bcc.planners.base import PlannerError, PlannerReply, PlannerRequest, StageRoute
from notebook_bcc.protocol.parse import parse_payload

XML = "application/xml"
JSON = "application/json"


def _xml(root: etree._Element) -> str:
    return str(etree.tostring(root, encoding="unicode", pretty_print=True))


def _sub(parent: etree._Element, tag: str, text: str | None = None, **attrs: str) -> etree._Element:
    element = etree.SubElement(parent, tag, **attrs)
    if text is not None:
        element.text = text
    return element


def _variables(parent: etree._Element, tag: str, names: list[str]) -> None:
    if names:
        holder = _sub(parent, tag)
        for name in names:
            _sub(holder, "variable", name=name)


def _acceptance(parent: etree._Element, criteria: list[str]) -> None:
    if criteria:
        holder = _sub(parent, "acceptance")
        for criterion in criteria:
            _sub(holder, "criterion", criterion)


class BlueprintPlanner:
    """Answers from a loaded blueprint; stateless beyond the blueprint (reads the snapshot)."""

    kind = "blueprint"
    fail_steps_on_gaps = True
    """D15: a blueprint step with a missing required variable fails instead of running."""

    def __init__(self, loaded: LoadedBlueprint) -> None:
        if loaded.kind != "blueprint":
            raise PlannerError(
                f"{loaded.filename}: a bare state machine has no stage bodies to run; "
                "write a D14 blueprint (stages with steps, behaviors and actions)"
            )
        self.loaded = loaded
        self.blueprint: Blueprint = loaded.blueprint
        self.machine: RuleMachine = self.blueprint.rule_machine()
        self.path: Path | None = loaded.path

    # -- metadata -------------------------------------------------------------------------

    def settings(self) -> dict[str, Any]:
        """Kind-specific settings recorded in ``snapshot.planner``."""
        return {
            "path": str(self.path) if self.path else None,
            "name": self.blueprint.name,
            "start_state": self.machine.start_state,
            "end_states": list(self.machine.end_states),
            "max_hops": self.machine.max_hops,
        }

    def files(self) -> list[Path]:
        """Input files declared by the blueprint, resolved against its folder."""
        return list(self.loaded.resolved_files())

    def stage_order(self) -> list[str]:
        """Stages with bodies, in file order, rotated so the start state comes first."""
        names = [
            name
            for name, spec in self.blueprint.states.items()
            if spec.steps or name not in self.machine.end_states
        ]
        start = self.machine.start_state
        if start in names:
            index = names.index(start)
            names = names[index:] + names[:index]
        return names

    def stage(self, stage_id: str) -> StageSpec:
        """A stage's spec; an unknown id is a planner error (the plan and blueprint disagree)."""
        try:
            return self.blueprint.states[stage_id]
        except KeyError:
            raise PlannerError(f"blueprint has no stage {stage_id!r}") from None

    def _step(self, stage_id: str, step_id: str | None) -> StepSpec:
        for step in self.stage(stage_id).steps:
            if step.id == step_id:
                return step
        raise PlannerError(f"blueprint stage {stage_id!r} has no step {step_id!r}")

    # -- answers --------------------------------------------------------------------------

    @staticmethod
    def _reply(text: str, kind: str, content_type: str) -> PlannerReply:
        return PlannerReply(parse_payload(text, kind), text, content_type)

    def stage_xml(self, stage_id: str, parent: etree._Element) -> None:
        """One ``<stage>`` element for ``stage_id``."""
        spec = self.stage(stage_id)
        element = _sub(parent, "stage", id=stage_id, title=spec.title or stage_id)
        if spec.goal:
            _sub(element, "goal", spec.goal)
        _variables(element, "verified_artifacts", spec.verified_artifacts)
        _variables(element, "required_variables", spec.required_variables)
        _acceptance(element, spec.acceptance)

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        """All stages with bodies, in order (``<stages>``)."""
        root = etree.Element("stages")
        remaining = _sub(root, "remaining")
        for stage_id in self.stage_order():
            self.stage_xml(stage_id, remaining)
        if self.blueprint.name:
            _sub(root, "focus", f"Blueprint {self.blueprint.name}")
        if request.snapshot.problem:
            _sub(root, "goals", request.snapshot.problem)
        return self._reply(_xml(root), "stages", XML)

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        """The current stage's steps (``<steps>``)."""
        stage_id = request.snapshot.location.current.stage_id
        if stage_id is None:
            raise PlannerError("no current stage to plan steps for")
        spec = self.stage(stage_id)
        root = etree.Element("steps", stage_id=stage_id)
        for step in spec.steps:
            element = _sub(root, "step", id=step.id, title=step.title or step.id)
            if step.goal:
                _sub(element, "goal", step.goal)
            _variables(element, "required_variables", step.required_variables)
        if spec.goal:
            _sub(root, "focus", spec.goal)
        return self._reply(_xml(root), "steps", XML)

    def _behavior_reply(self, step: StepSpec, behavior: BehaviorSpec) -> PlannerReply:
        root = etree.Element(
            "behavior",
            id=behavior.id,
            step_id=step.id,
            max_iterations=str(behavior.max_iterations),
        )
        _sub(root, "agent", behavior.agent or "Blueprint")
        _sub(root, "task", behavior.task or step.goal or behavior.id)
        if behavior.required_variables:
            inputs = _sub(root, "inputs")
            for name in behavior.required_variables:
                _sub(inputs, "variable", name=name)
        _acceptance(root, behavior.acceptance)
        return self._reply(_xml(root), "behavior", XML)

    def _next_behavior(self, snapshot: WorkflowSnapshot) -> tuple[StepSpec, BehaviorSpec | None]:
        """The behavior to run next in the current step, from what already completed."""
        current = snapshot.location.current
        if current.stage_id is None:
            raise PlannerError("no current stage")
        step = self._step(current.stage_id, current.step_id)
        done = snapshot.location.progress.behaviors.completed
        ids = [b.id for b in step.behaviors]
        if not done:
            return step, step.behaviors[0] if step.behaviors else None
        last = done[-1]
        if last.id not in ids:
            raise PlannerError(f"behavior {last.id!r} is not part of step {step.id!r}")
        position = ids.index(last.id)
        if last.completion_status != "success":
            return step, step.behaviors[position]
        following = position + 1
        return step, step.behaviors[following] if following < len(ids) else None

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        """The next behavior of the step; planning JSON ``targetAchieved`` when none is left."""
        step, behavior = self._next_behavior(request.snapshot)
        if request.snapshot.fsm.state.value == "behavior_running":
            current = request.snapshot.location.progress.behaviors.current
            if behavior is None or (current is not None and current.id == behavior.id):
                return None
            return self._behavior_reply(step, behavior)
        if behavior is None:
            body = json.dumps({"targetAchieved": True, "transition": {"continue_behaviors": False}})
            return self._reply(body, "planning", JSON)
        return self._behavior_reply(step, behavior)

    def _behavior_spec(self, snapshot: WorkflowSnapshot) -> BehaviorSpec:
        current = snapshot.location.current
        step = self._step(current.stage_id or "", current.step_id)
        for behavior in step.behaviors:
            if behavior.id == current.behavior_id:
                return behavior
        raise PlannerError(f"step {step.id!r} has no behavior {current.behavior_id!r}")

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        """The behavior's actions as JSON actions (code: ``add`` then ``exec``)."""
        spec = self._behavior_spec(request.snapshot)
        actions: list[dict[str, Any]] = []
        for action in spec.actions:
            actions.extend(_json_actions(action))
        return self._reply(json.dumps({"actions": actions}), "json-actions", JSON)

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        """Continue (retry, or the next behavior) or complete the step, by acceptance."""
        snapshot = request.snapshot
        spec = self._behavior_spec(snapshot)
        results = snapshot.acceptance.get(spec.id, {})
        queue = snapshot.action_queue
        # a cell that raised fails the behavior as it fails a papermill run, whatever the
        # acceptance says (no criteria, or criteria the raise did not reach)
        cells_failed = queue.executed - queue.succeeded
        passed = cells_failed == 0 and all(r.status == "passed" for r in results.values())
        step, _ = self._next_behavior(snapshot)
        ids = [b.id for b in step.behaviors]
        is_last = ids.index(spec.id) == len(ids) - 1
        complete = passed and is_last
        root = etree.Element("reflection", current_step_is_complete="true" if complete else "false")
        evaluation = _sub(root, "evaluation")
        validation = _sub(evaluation, "acceptance_validation")
        for criterion, result in results.items():
            _sub(validation, "criterion", criterion, status=result.status)
        _sub(
            evaluation,
            "goal_achievement",
            reasoning_text := (
                "all acceptance criteria passed"
                if passed
                else _shortfall(cells_failed, queue.last_result, results)
            ),
            status="achieved" if passed else "not_achieved",
        )
        decision = _sub(root, "decision")
        _sub(decision, "next_state", "STEP_COMPLETED" if complete else "BEHAVIOR_RUNNING")
        _sub(decision, "reasoning", reasoning_text)
        return self._reply(_xml(root), "reflection", XML)

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        """The next step while steps remain, else the stage completes."""
        snapshot = request.snapshot
        progress = snapshot.location.progress
        stage_id = snapshot.location.current.stage_id or ""
        remaining = progress.steps.remaining
        steps_ok = all(s.completion_status == "success" for s in progress.steps.completed)
        current_step = progress.steps.current
        if current_step is not None and current_step.completion_status not in (None, "success"):
            steps_ok = False
        stage_results = snapshot.acceptance.get(f"stage:{stage_id}", {})
        stage_ok = all(r.status == "passed" for r in stage_results.values())
        complete = not remaining or not steps_ok
        root = etree.Element("stage_reflection", stage_is_complete="true" if complete else "false")
        assessment = _sub(root, "stage_assessment")
        done = len(progress.steps.completed) + (1 if current_step is not None else 0)
        total = done + len(remaining)
        _sub(assessment, "progress", f"{done}/{total} steps")
        achieved = steps_ok and (stage_ok or not complete)
        _sub(assessment, "goal_status", "achieved" if achieved else "not_achieved")
        decision = _sub(root, "decision")
        _sub(decision, "next_state", "STAGE_COMPLETED" if complete else "STEP_RUNNING")
        if complete and not steps_ok:
            reason = "a step failed: the stage ends and its failure is routed"
        elif complete:
            reason = "every step completed" + ("" if stage_ok else "; stage acceptance failed")
        else:
            reason = f"{len(remaining)} step(s) remain"
        _sub(decision, "reasoning", reason)
        return self._reply(_xml(root), "stage_reflection", XML)

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        """The stage machine's answer (see the module docstring)."""
        snapshot = request.snapshot
        stage = snapshot.location.progress.stages.current
        if stage is None:
            raise PlannerError("no stage to route from")
        spec = self.stage(stage.id)
        outcome: Literal["success", "failure", "pause"]
        if decided is not None:
            outcome = decided
        elif spec.confirm:
            outcome = "pause"
        else:
            outcome = "success" if stage.completion_status == "success" else "failure"
        namespace = _when_namespace(snapshot, stage, outcome)
        resolution = resolve(self.machine, stage.id, outcome, namespace)
        warnings = tuple(resolution.warnings)
        if outcome == "pause":
            question = spec.confirm if isinstance(spec.confirm, str) else None
            message = question or f"Stage {stage.id} is done: continue?"
            if stage.completion_status not in ("success", None):
                # the human is asked to go on after a failure: say so, or "yes" reads as
                # approving a stage that worked
                message += (
                    f" Note: stage {stage.id} did not succeed ({stage.completion_status}); "
                    "approving goes on as if it had, rejecting fails the workflow."
                )
            return StageRoute(
                "pause",
                resolution.resume_state or stage.id,
                rule=_label(resolution),
                warnings=warnings,
                message=message,
            )
        target = resolution.target
        rule = _label(resolution)
        if target is None and outcome == "failure":
            # no rule routes this failure (a step that failed, unmet stage acceptance, or a
            # human's "no" at a confirmation): the workflow fails here, as a papermill run
            # stops at its first error; going on in file order ran later stages on missing
            # state, or an irreversible stage after a rejection, and reported "completed"
            return StageRoute(
                outcome,
                None,
                failed=True,
                rule="no rule routes a failure: the workflow fails",
                warnings=warnings,
            )
        if target is None:
            target = self._next_planned(snapshot, stage.id)
            rule = "next in file order" if target is not None else "last stage"
        if target is None or (
            target in self.machine.end_states and not self.stage_has_body(target)
        ):
            return StageRoute(
                outcome,
                None,
                end_state=target,
                failed=outcome == "failure",
                rule=rule,
                warnings=warnings,
            )
        return StageRoute(outcome, target, rule=rule, warnings=warnings)

    def _next_planned(self, snapshot: WorkflowSnapshot, stage_id: str) -> str | None:
        """The next stage in file order that the plan still holds (an approved update may
        have removed stages, D18)."""
        stages = snapshot.location.progress.stages
        planned = {s.id for s in [*stages.remaining, *stages.completed]}
        if stages.current is not None:
            planned.add(stages.current.id)
        name: str | None = stage_id
        while True:
            name = self.machine.next_in_file_order(name) if name is not None else None
            if name is None or name in planned or name in self.machine.end_states:
                return name

    def stage_has_body(self, name: str) -> bool:
        """Whether ``name`` is a stage with steps to run (an end state may have none)."""
        spec = self.blueprint.states.get(name)
        return spec is not None and bool(spec.steps)

    def stage_item(self, stage_id: str) -> PlanItem:
        """The plan item of a stage, for re-entering it."""
        spec = self.stage(stage_id)
        return PlanItem(
            id=stage_id,
            title=spec.title or stage_id,
            goal=spec.goal,
            verified_artifacts=list(spec.verified_artifacts),
            required_variables=list(spec.required_variables),
            acceptance=list(spec.acceptance),
        )

    async def aclose(self) -> None:
        """Nothing to release."""


def _shortfall(cells_failed: int, last_result: str | None, results: dict[str, Any]) -> str:
    """Why a behavior is not achieved: the cells that failed, then the unmet criteria."""
    reasons: list[str] = []
    if cells_failed:
        reasons.append(f"{cells_failed} code cell(s) failed (last: {last_result or 'error'})")
    unmet = [c for c, r in results.items() if r.status != "passed"]
    if unmet:
        reasons.append("acceptance not met: " + "; ".join(unmet))
    return "; ".join(reasons)


def _label(resolution: Any) -> str | None:
    if resolution.rule is None:
        return None
    return f"transitions[{resolution.index}] {resolution.rule.label}"


def _json_actions(action: ActionSpec) -> list[dict[str, Any]]:
    if action.markdown is not None:
        return [{"type": "add", "content": action.markdown, "shot_type": "markdown"}]
    add: dict[str, Any] = {"type": "add", "content": action.code, "shot_type": "action"}
    if action.irreversible:
        add["irreversible"] = True
    return [add, {"type": "exec", "codecell_id": "lastAddedCellId"}]


def _when_namespace(snapshot: WorkflowSnapshot, stage: PlanItem, outcome: str) -> dict[str, Any]:
    """D13's plain-JSON namespace for a ``when`` at the end of ``stage``."""
    variables: dict[str, Any] = {}
    for name, info in snapshot.variables.items():
        if info.value is not None:
            variables[name] = info.value
        else:
            variables[name] = {
                key: value
                for key, value in info.model_dump(mode="json", exclude_none=True).items()
                if key != "source"
            }
    acceptance = {
        owner: {criterion: result.status for criterion, result in results.items()}
        for owner, results in snapshot.acceptance.items()
    }
    effects = {"current": list(snapshot.effects.current), "history": list(snapshot.effects.history)}
    visits = snapshot.stage_machine.visits.get(stage.id, stage.visits)
    return when_namespace(
        event=outcome,
        variables=variables,
        acceptance=acceptance,
        effects=effects,
        stage_id=stage.id,
        visits=visits,
        last_output=snapshot.notebook.last_output,
    )
