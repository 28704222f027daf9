"""Optional planner capabilities, as typed protocols instead of ``getattr`` probes.

Every planner answers the :class:`~notebook_bcc.planners.base.Planner` protocol; some can do
more, and the engine, the server and the CLI ask for it with ``isinstance`` against one of the
protocols below (each ``runtime_checkable``: the check looks for the member, and a
:class:`~notebook_bcc.planners.recording.RecordingPlanner` forwards members of the planner it
wraps, so a recorded blueprint run still has its stage machine).

| protocol | who has it | asked by |
|---|---|---|
| :class:`StageMachinePlanner` | blueprint | the stage diagram (``machine=stages``) |
| :class:`BlueprintBacked` | blueprint | the CLI (parameters, report plan), problem name |
| :class:`DeclaresFiles` | blueprint, replay | the CLI and server (the run's input files) |
| :class:`RecordedRun` | replay | the problem, parameters of a replayed run |
| :class:`GapStrictPlanner` | blueprint, replay | the engine at step_running (D15) |
| :class:`StageItemMaker` | blueprint, replay | the engine re-entering a stage the plan lost |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from notebook_bcc.blueprint.loader import LoadedBlueprint
    from notebook_bcc.blueprint.models import Blueprint
    from notebook_bcc.fsm.rules import RuleMachine
    from notebook_bcc.models.snapshot import PlanItem


@runtime_checkable
class StageMachinePlanner(Protocol):
    """Routes stages by a declared rule machine (seed 004)."""

    machine: RuleMachine


@runtime_checkable
class BlueprintBacked(Protocol):
    """Plans from a loaded D14 blueprint."""

    loaded: LoadedBlueprint
    blueprint: Blueprint


@runtime_checkable
class RecordedRun(Protocol):
    """Plays a recorded run back: its problem and parameters come from the recording."""

    @property
    def problem(self) -> str | None:
        """The recorded run's problem text."""

    @property
    def parameters(self) -> dict[str, Any]:
        """The recorded run's parameters."""


@runtime_checkable
class DeclaresFiles(Protocol):
    """Brings its own input files (a blueprint's ``files:``, a recording's copies)."""

    def files(self) -> list[Path]:
        """The input files, as paths on this machine."""


@runtime_checkable
class GapStrictPlanner(Protocol):
    """Says whether a step with a missing required variable fails without asking (D15)."""

    fail_steps_on_gaps: bool


@runtime_checkable
class StageItemMaker(Protocol):
    """Builds the plan item of a stage by id (for re-entering a stage the plan no longer lists)."""

    def stage_item(self, stage_id: str) -> PlanItem | None:
        """The stage's plan item, or None when the planner does not know it."""


def fails_steps_on_gaps(planner: object) -> bool:
    """True when ``planner`` fails a step whose required variables are missing (D15)."""
    return isinstance(planner, GapStrictPlanner) and bool(planner.fail_steps_on_gaps)


def problem_of(planner: object) -> str | None:
    """The problem a planner brings with it: a blueprint's name or a recording's problem."""
    if isinstance(planner, BlueprintBacked):
        return planner.blueprint.name
    if isinstance(planner, RecordedRun):
        return planner.problem
    return None


def parameters_for(
    planner: object, given: dict[str, Any], *, raw: dict[str, str] | None = None
) -> dict[str, Any]:
    """A run's parameters, whichever way it starts (CLI or REST): ``given`` checked against a
    blueprint's ``parameters:`` section with its defaults filled in; a replay's recorded ones
    (it takes none given). Raises ``ParameterError`` naming the first bad parameter."""
    from notebook_bcc.blueprint.parameters import ParameterError, resolve

    if isinstance(planner, RecordedRun):
        if given:
            raise ParameterError(
                "a replay uses the recorded parameters; give none",
                details={"given": sorted(given)},
            )
        return dict(planner.parameters)
    declared = planner.blueprint.parameters if isinstance(planner, BlueprintBacked) else None
    return resolve(given, declared, raw=raw)


__all__ = [
    "BlueprintBacked",
    "DeclaresFiles",
    "GapStrictPlanner",
    "RecordedRun",
    "StageItemMaker",
    "StageMachinePlanner",
    "fails_steps_on_gaps",
    "parameters_for",
    "problem_of",
]
