"""What a headless run did, stage visit by stage visit: the source of the JUnit report and of
the report's summary.

A :class:`RunLedger` listens to the engine's events while the run goes and reads the snapshot
each event was published with: a ``stage_running`` transition opens a stage visit, a
``behavior_running`` one opens a behavior run (a retry replaces the earlier iteration, which
it keeps in ``previous``: the behavior's outcome is its last iteration's), ``behavior_completed``
closes it with the behavior's acceptance results and the failing cell's error, if any;
``stage_completed`` closes the visit with its outcome. Steps and behaviors that were planned
but never started are kept as ``not reached``; a blueprint's plan fills in the behaviors of
steps and stages the run never entered.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from time import monotonic
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from notebook_bcc.engine.engine import Engine
    from notebook_bcc.models.event import WorkflowEvent
    from notebook_bcc.models.snapshot import WorkflowSnapshot

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TRACEBACK_CHARS = 20_000
"""Longest traceback kept for one failure."""

Plan = dict[str, list[tuple[str, str]]]
"""Stage id -> its (step id, behavior id) pairs in order (a blueprint's plan)."""


def strip_ansi(text: str) -> str:
    """Terminal colour codes removed (tracebacks from IPython carry them)."""
    return _ANSI.sub("", text)


@dataclass
class CellError:
    """A failed cell: nbformat's ``ename``/``evalue``/``traceback`` (or the contract's message)."""

    ename: str
    evalue: str
    traceback: str
    cell_id: str | None = None


@dataclass
class BehaviorRun:
    """One iteration of one behavior (a JUnit test case)."""

    step_id: str
    behavior_id: str
    iteration: int = 1
    started: float | None = None
    ended: float | None = None
    acceptance: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    errors: list[CellError] = field(default_factory=list)
    executed: int = 0
    reached: bool = True
    former_ids: list[str] = field(default_factory=list)
    """Ids this behavior had before a planner re-planned it."""
    previous: list[BehaviorRun] = field(default_factory=list)
    """Earlier iterations of the same behavior in the same stage visit (retries, D15)."""

    @property
    def seconds(self) -> float:
        """Wall time of this iteration and the earlier ones (0 when not reached)."""
        own = 0.0
        if self.started is not None and self.ended is not None:
            own = max(0.0, self.ended - self.started)
        return own + sum(run.seconds for run in self.previous)

    @property
    def outcome(self) -> str:
        """``passed``, ``failed`` (an acceptance criterion failed), ``error`` (a cell failed
        or a criterion could not be evaluated) or ``skipped`` (not reached or not finished)."""
        if not self.reached or self.ended is None:
            return "skipped"
        if self.errors:
            return "error"
        statuses = {status for status, _ in self.acceptance.values()}
        if "error" in statuses:
            return "error"
        if "failed" in statuses:
            return "failed"
        return "passed"


@dataclass
class StageVisit:
    """One entry into a stage (a JUnit test suite)."""

    stage_id: str
    visit: int
    title: str | None = None
    started: float | None = None
    ended: float | None = None
    started_at: str | None = None
    outcome: str | None = None
    behaviors: list[BehaviorRun] = field(default_factory=list)
    planned: list[tuple[str, str | None]] = field(default_factory=list)
    reached: bool = True

    @property
    def seconds(self) -> float:
        """Wall time of the visit so far."""
        if self.started is None:
            return 0.0
        return max(0.0, (self.ended if self.ended is not None else monotonic()) - self.started)

    @property
    def status(self) -> str:
        """The stage's outcome, ``not reached``, or ``running`` when the run stopped in it."""
        if not self.reached:
            return "not reached"
        return self.outcome or "unfinished"


@dataclass
class Decision:
    """A human decision asked or answered during the run."""

    at: str
    event: str
    kind: str
    message: str
    actor: str


class RunLedger:
    """Collects stage visits, behavior runs and decisions from a live engine."""

    def __init__(self, plan: Plan | None = None) -> None:
        self.plan: Plan = dict(plan or {})
        self.visits: list[StageVisit] = []
        self.decisions: list[Decision] = []
        self.began = monotonic()
        self.ended: float | None = None
        self._engine: Engine | None = None
        self._behavior: BehaviorRun | None = None
        self._failed_contracts: dict[str, str] = {}
        self.stage_titles: dict[str, str] = {}

    def attach(self, engine: Engine) -> None:
        """Subscribe to the engine's events."""
        self._engine = engine
        engine.subscribe(self.on_event)

    @property
    def current(self) -> StageVisit | None:
        """The stage visit in progress, if any."""
        if self.visits and self.visits[-1].ended is None:
            return self.visits[-1]
        return None

    def on_event(self, event: WorkflowEvent) -> None:
        """Update the ledger from one event and the snapshot it came with."""
        if self._engine is None:
            return
        snap = self._engine.snapshot
        self._note_plan(snap)
        if event.kind == "contract" and event.event == "fail":
            contract = str(event.detail.get("contract_id") or "")
            self._failed_contracts[contract] = str(event.detail.get("error_message") or "")
            self._cell_failed(contract)
        elif event.kind == "decision":
            self.decisions.append(_decision(event))
        elif event.kind == "transition":
            self._transition(event, snap)
            self._settle_outcomes(snap)
        elif event.kind == "run" and event.event == "route":
            self._routed(str(event.detail.get("stage") or ""), event.detail.get("outcome"))

    def _settle_outcomes(self, snap: WorkflowSnapshot) -> None:
        """Closed visits without a route event take the outcome their stage completed with."""
        completed = {s.id: s.completion_status for s in snap.location.progress.stages.completed}
        for visit in self.visits:
            if visit.ended is not None and visit.outcome is None:
                status = completed.get(visit.stage_id)
                if status is not None:
                    visit.outcome = status

    def _routed(self, stage_id: str, outcome: object) -> None:
        """A stage's outcome as its route says (``success``, ``failure``, ``pause``)."""
        for visit in reversed(self.visits):
            if visit.stage_id == stage_id:
                if isinstance(outcome, str) and outcome:
                    visit.outcome = outcome
                return

    def _note_plan(self, snap: WorkflowSnapshot) -> None:
        progress = snap.location.progress
        for item in [*progress.stages.completed, *progress.stages.remaining]:
            if item.title:
                self.stage_titles.setdefault(item.id, item.title)
        if progress.stages.current is not None and progress.stages.current.title:
            self.stage_titles.setdefault(progress.stages.current.id, progress.stages.current.title)
        visit = self.current
        if visit is None or snap.location.current.stage_id != visit.stage_id:
            return
        steps = progress.steps
        known = {(s, b) for s, b in visit.planned}
        for step in [
            *steps.completed,
            *([steps.current] if steps.current else []),
            *steps.remaining,
        ]:
            if (step.id, None) not in known and not any(s == step.id for s, _ in known):
                visit.planned.append((step.id, None))
                known.add((step.id, None))
        current_step = steps.current.id if steps.current else None
        behaviors = progress.behaviors
        if current_step is not None:
            for item in [
                *behaviors.completed,
                *([behaviors.current] if behaviors.current else []),
                *behaviors.remaining,
            ]:
                if (current_step, item.id) not in known:
                    visit.planned.append((current_step, item.id))
                    known.add((current_step, item.id))

    def _transition(self, event: WorkflowEvent, snap: WorkflowSnapshot) -> None:
        now = monotonic()
        current = snap.location.current
        if event.to == "stage_running":
            self._close_stage(snap, now)
            stage_id = current.stage_id or "_stage"
            visit = StageVisit(
                stage_id=stage_id,
                visit=snap.stage_machine.visits.get(stage_id, 1),
                title=self.stage_titles.get(stage_id),
                started=now,
                started_at=event.at,
            )
            self.visits.append(visit)
            self._note_plan(snap)
        elif event.to == "behavior_running":
            entered = self.current
            if entered is None:
                return
            self._close_behavior(snap, now)
            run = BehaviorRun(
                step_id=current.step_id or "_step",
                behavior_id=current.behavior_id or "_behavior",
                iteration=max(current.behavior_iteration, 1),
                started=now,
            )
            index = _retried(entered.behaviors, run)
            if index is not None:
                # a retry: one test case per behavior, earlier iterations kept inside it
                earlier = entered.behaviors[index]
                run.previous = [*earlier.previous, earlier]
                earlier.previous = []
                entered.behaviors[index] = run
            else:
                entered.behaviors.append(run)
            self._behavior = run
        elif event.to == "behavior_completed":
            running = self._behavior
            # the snapshot is the engine's now: still at behavior_completed unless the moves
            # after it rode in the same commit (a folded blueprint boundary); then the
            # current behavior is already the next one, and the id the run opened with stands
            settled = snap.fsm.state.value == "behavior_completed"
            if (
                running is not None
                and settled
                and current.step_id == running.step_id
                and current.behavior_id
            ):
                # a planner may re-plan a retried behavior under a new id (plan_behavior)
                if current.behavior_id != running.behavior_id:
                    running.former_ids.append(running.behavior_id)
                running.behavior_id = current.behavior_id
            self._close_behavior(snap, now)
        elif event.to == "stage_completed":
            self._close_stage(snap, now)

    def _close_behavior(self, snap: WorkflowSnapshot, now: float) -> None:
        run = self._behavior
        if run is None:
            return
        self._behavior = None
        run.ended = now
        results = snap.acceptance.get(run.behavior_id, {})
        run.acceptance = {
            criterion: (result.status, result.message) for criterion, result in results.items()
        }
        run.executed = snap.action_queue.executed

    def _close_stage(self, snap: WorkflowSnapshot, now: float) -> None:
        visit = self.current
        if visit is None:
            return
        self._close_behavior(snap, now)
        visit.ended = now
        done = [s for s in snap.location.progress.stages.completed if s.id == visit.stage_id]
        if done:
            visit.outcome = done[-1].completion_status or "success"
        visit.title = visit.title or self.stage_titles.get(visit.stage_id)

    def _cell_failed(self, contract_id: str) -> None:
        run = self._behavior
        if run is None or self._engine is None:
            return
        message = self._failed_contracts.get(contract_id, "")
        timed_out = message.startswith("timeout: ")
        for cell in reversed(self._engine.runtime.document.cells):
            bcc = cell.get("metadata", {}).get("notebook_bcc") or {}
            if bcc.get("contract_id") != contract_id:
                continue
            for error in _cell_errors(cell):
                if timed_out:
                    # past its timeout the engine interrupted the cell: the traceback is the
                    # interrupt's (KeyboardInterrupt), the cause is the timeout
                    error.ename, _, error.evalue = message.removeprefix("timeout: ").partition(": ")
                run.errors.append(error)
                return
            break
        run.errors.append(CellError(ename="CellFailed", evalue=message, traceback=message))

    def finish(self, snapshot: WorkflowSnapshot) -> None:
        """The run ended: close what is open (unfinished) and add the stages never reached."""
        now = monotonic()
        self.ended = now
        if self._behavior is not None:
            self._behavior = None  # stopped inside a behavior: it stays unfinished (skipped)
        visit = self.current
        if visit is not None:
            visit.ended = now
        entered = {v.stage_id for v in self.visits}
        remaining = [s.id for s in snapshot.location.progress.stages.remaining]
        planned_stages = [stage_id for stage_id, pairs in self.plan.items() if pairs]
        for stage_id in [*remaining, *planned_stages]:
            if stage_id in entered:
                continue
            entered.add(stage_id)
            planned: list[tuple[str, str | None]] = list(self.plan.get(stage_id, []))
            self.visits.append(
                StageVisit(
                    stage_id=stage_id,
                    visit=0,
                    title=self.stage_titles.get(stage_id),
                    planned=planned,
                    reached=False,
                )
            )
        for visit in self.visits:
            self._add_unreached(visit)

    def _add_unreached(self, visit: StageVisit) -> None:
        ran_steps = {b.step_id for b in visit.behaviors}
        ran: set[tuple[str, str | None]] = set()
        for run in visit.behaviors:
            for earlier in [run, *run.previous]:
                ran |= {(earlier.step_id, i) for i in [earlier.behavior_id, *earlier.former_ids]}
        planned = list(visit.planned)
        for pair in self.plan.get(visit.stage_id, []):
            if pair not in planned:
                planned.append(pair)
        for step_id, behavior_id in planned:
            if behavior_id is None:
                has_behaviors = any(s == step_id and b for s, b in planned)
                if step_id in ran_steps or has_behaviors:
                    continue
            elif (step_id, behavior_id) in ran:
                continue
            visit.behaviors.append(
                BehaviorRun(step_id=step_id, behavior_id=behavior_id or "", reached=False)
            )
            ran.add((step_id, behavior_id or ""))

    def seed(
        self, snapshot: WorkflowSnapshot, cells: list[dict[str, Any]], events: list[WorkflowEvent]
    ) -> None:
        """Fill the ledger with what a stored run did before this process (``resume``), so its
        reports describe the whole run: stage visits and behavior runs from the notebook's
        cell metadata, acceptance from the snapshot, decisions and routes from stored events.

        Only the last iteration of a behavior has its acceptance results stored; an earlier
        one (it was retried, so it did not pass) is marked failed saying so.
        """
        self._note_plan(snapshot)
        now_mono, now_wall = monotonic(), time.time()

        def mono(stamp: object) -> float | None:
            wall = _epoch(stamp)
            return None if wall is None else now_mono - (now_wall - wall)

        visits: dict[tuple[str, int], StageVisit] = {}
        runs: dict[tuple[str, int, str, str, int], BehaviorRun] = {}
        for cell in cells:
            bcc = cell.get("metadata", {}).get("notebook_bcc") or {}
            stage_id, step_id = str(bcc.get("stage_id") or ""), str(bcc.get("step_id") or "")
            behavior_id = str(bcc.get("behavior_id") or "")
            if not stage_id or stage_id.startswith("_") or not step_id or not behavior_id:
                continue  # the inputs cell, the user's own cells
            number = int(bcc.get("visit") or 1)
            start, end = mono(bcc.get("started_at")), mono(bcc.get("ended_at"))
            visit = visits.get((stage_id, number))
            if visit is None:
                visit = StageVisit(
                    stage_id=stage_id,
                    visit=number,
                    title=self.stage_titles.get(stage_id),
                    started_at=bcc.get("started_at"),
                )
                visits[(stage_id, number)] = visit
                self.visits.append(visit)
            key = (stage_id, number, step_id, behavior_id, int(bcc.get("iteration") or 1))
            run = runs.get(key)
            if run is None:
                run = runs[key] = BehaviorRun(step_id, behavior_id, iteration=key[-1])
                earlier = next(
                    (i for i, b in enumerate(visit.behaviors) if b.behavior_id == behavior_id),
                    None,
                )
                if earlier is None:
                    visit.behaviors.append(run)
                else:  # a retry of the same behavior: the earlier iteration did not pass
                    old = visit.behaviors[earlier]
                    if not old.errors:
                        old.acceptance = {_NOT_KEPT: ("failed", "retried; not kept")}
                    run.previous, old.previous = [*old.previous, old], []
                    visit.behaviors[earlier] = run
            for stamp in (start, end):
                if stamp is not None:
                    run.started = stamp if run.started is None else min(run.started, stamp)
                    run.ended = stamp if run.ended is None else max(run.ended, stamp)
                    visit.started = run.started if visit.started is None else visit.started
                    visit.ended = stamp if visit.ended is None else max(visit.ended, stamp)
            run.executed += 1 if cell.get("cell_type") == "code" else 0
            run.errors += _cell_errors(cell)
        for visit in self.visits:
            for run in visit.behaviors:
                results = snapshot.acceptance.get(run.behavior_id, {})
                run.acceptance = {c: (r.status, r.message) for c, r in results.items()}
                run.ended = run.ended if run.ended is not None else run.started or now_mono
                visit.started = visit.started if visit.started is not None else now_mono
                visit.ended = visit.ended if visit.ended is not None else visit.started
        self._reopen(snapshot)
        for event in events:
            if event.kind == "decision" or (event.kind == "run" and event.event == "route"):
                self._events_only(event)
        self._settle_outcomes(snapshot)
        starts = [v.started for v in self.visits if v.started is not None]
        ends = [v.ended for v in self.visits if v.ended is not None]
        if starts and ends:  # the time the earlier part ran counts towards the run's time
            self.began -= max(0.0, max(ends) - min(starts))

    def _reopen(self, snapshot: WorkflowSnapshot) -> None:
        """A stored run stopped inside a stage (or behavior) goes on in it: keep it open."""
        state = snapshot.fsm.state.value
        current = snapshot.location.current
        if not self.visits or state not in _INSIDE_STAGE:
            return
        visit = self.visits[-1]
        if visit.stage_id != current.stage_id:
            return
        visit.ended = None
        if state in _INSIDE_BEHAVIOR and visit.behaviors:
            run = visit.behaviors[-1]
            if run.behavior_id == current.behavior_id and run.step_id == current.step_id:
                run.ended = None
                run.acceptance = {}
                self._behavior = run

    def _events_only(self, event: WorkflowEvent) -> None:
        """A stored decision or route event, as :meth:`on_event` takes a live one."""
        if event.kind == "decision":
            self.decisions.append(_decision(event))
        else:
            self._routed(str(event.detail.get("stage") or ""), event.detail.get("outcome"))

    def totals(self) -> dict[str, Any]:
        """Counts of behavior runs by outcome, across the run."""
        counts = {"passed": 0, "failed": 0, "error": 0, "skipped": 0}
        for visit in self.visits:
            for run in visit.behaviors:
                counts[run.outcome] += 1
        return counts


_NOT_KEPT = "(this attempt's results were not kept in the store)"
_INSIDE_BEHAVIOR = {"behavior_running", "action_running", "action_completed"}
_INSIDE_STAGE = {"stage_running", "step_running", "step_completed", *_INSIDE_BEHAVIOR}


def _epoch(stamp: object) -> float | None:
    """Seconds since the epoch of an ISO timestamp (None when absent or unreadable)."""
    from datetime import datetime

    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _cell_errors(cell: dict[str, Any]) -> list[CellError]:
    """The error outputs of a cell (live, or stored for ``resume``), in order."""
    errors = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            trace = strip_ansi("\n".join(output.get("traceback") or []))
            errors.append(
                CellError(
                    ename=str(output.get("ename") or "Error"),
                    evalue=str(output.get("evalue") or ""),
                    traceback=trace[-TRACEBACK_CHARS:],
                    cell_id=str(cell.get("id")),
                )
            )
    return errors


def _retried(runs: list[BehaviorRun], run: BehaviorRun) -> int | None:
    """The index of the run ``run`` retries: the last one of its step, when that one did not
    pass (seed 000 "Behavior Retry": the same behavior again while its artifacts are
    incomplete). After a passed behavior the step's next iteration is the step's next
    behavior (a blueprint step lists several), its own test case, whatever id a planner gives
    it at first."""
    for index in range(len(runs) - 1, -1, -1):
        earlier = runs[index]
        if earlier.step_id != run.step_id or not earlier.reached:
            continue
        return None if earlier.outcome == "passed" else index
    return None


def blueprint_plan(document: Any) -> Plan:
    """The (step, behavior) pairs of every stage of a D14 blueprint, in file order."""
    plan: Plan = {}
    for stage_id, stage in getattr(document, "states", {}).items():
        pairs: list[tuple[str, str]] = []
        for step in getattr(stage, "steps", []):
            for behavior in getattr(step, "behaviors", []):
                pairs.append((step.id, behavior.id))
        plan[stage_id] = pairs
    return plan


def _decision(event: WorkflowEvent) -> Decision:
    """The ledger's record of a decision event (asked, answered), live or stored."""
    detail = event.detail
    return Decision(
        at=event.at,
        event=str(event.event or ""),
        kind=str(detail.get("kind") or ""),
        message=str(detail.get("message") or detail.get("stage") or ""),
        actor=event.actor,
    )
