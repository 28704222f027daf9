"""Variables, outputs tracking and gaps: the merges every apply shares.

Planner claims never overwrite what the kernel observed: a variable the probe summarized
(``source="kernel"``) keeps its summary when a reflection names it again.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from notebook_bcc.models.snapshot import Gap, Outputs, PlanItem, VariableInfo, WorkflowSnapshot
from notebook_bcc.workflow.effects import add_current, warn_effect
from notebook_bcc.workflow.result import Draft

USER_VARIABLES = ("user_problem", "user_submit_files")
"""Seed 000's user inputs, present whenever the snapshot records a problem / files."""


def unique(values: Iterable[str]) -> list[str]:
    """``values`` without duplicates or empty strings, in first-seen order."""
    return [value for value in dict.fromkeys(values) if value]


def known_variables(snapshot: WorkflowSnapshot) -> set[str]:
    """Names the workflow can use now: variables plus the user's problem and files."""
    known = set(snapshot.variables)
    if snapshot.problem is not None:
        known.add("user_problem")
    if snapshot.files:
        known.add("user_submit_files")
    return known


def json_type(value: Any) -> str:
    """The Python type name of a JSON value (``int``, ``str``, ``list``, ...)."""
    return type(value).__name__


def value_info(value: Any) -> VariableInfo:
    """A planner-set JSON value as a :class:`VariableInfo` (D13: the value itself is kept)."""
    length = len(value) if isinstance(value, (list, dict)) else None
    return VariableInfo(type=json_type(value), value=value, length=length, source="planner")


def described_info(description: str | None, type_name: str | None = None) -> VariableInfo:
    """A variable a planner declared (name and description, no value)."""
    return VariableInfo(type=type_name or "unknown", repr=description or None, source="planner")


def merge_values(draft: Draft, values: Mapping[str, Any]) -> None:
    """``context_update.variables``: planner values set (a kernel summary is not overwritten)."""
    if not values:
        return
    variables = dict(draft.snapshot.variables)
    for name, value in values.items():
        existing = variables.get(name)
        if existing is not None and existing.source == "kernel":
            draft.warn(f"variable {name!r} is observed in the kernel; the planner value is ignored")
            continue
        variables[name] = value_info(value)
    _set_variables(draft, variables)


def merge_declared(draft: Draft, declared: Mapping[str, VariableInfo]) -> None:
    """Variables a reflection says it produced: added, or their planner summary refreshed."""
    if not declared:
        return
    variables = dict(draft.snapshot.variables)
    changed = False
    for name, info in declared.items():
        existing = variables.get(name)
        if existing is not None and existing.source != "planner":
            continue
        if existing is not None and existing.value is not None:
            continue
        variables[name] = info
        changed = True
    if changed:
        _set_variables(draft, variables)


def declared_from_json(value: Any) -> dict[str, VariableInfo]:
    """``variables_produced`` of a control signal: a mapping, a list of names, or one name."""
    if isinstance(value, Mapping):
        return {
            str(name): described_info(
                description if isinstance(description, str) else json.dumps(description)
            )
            for name, description in value.items()
        }
    if isinstance(value, list):
        return {str(name): described_info(None) for name in value if isinstance(name, str)}
    if isinstance(value, str) and value:
        return {value: described_info(None)}
    return {}


def _set_variables(draft: Draft, variables: dict[str, VariableInfo]) -> None:
    gaps = [gap for gap in draft.snapshot.gaps if gap.variable not in variables]
    draft.set(variables=variables, gaps=gaps)


def deprecate(draft: Draft, names: Sequence[str], retained: Sequence[str]) -> None:
    """Stage reflection variable management: hide ``names`` from planners, unhide ``retained``."""
    keep = set(retained)
    clash = [name for name in names if name in keep]
    for name in clash:
        draft.warn(f"variable {name!r} is both retained and deprecated; it is retained")
    current = [name for name in draft.snapshot.deprecated_variables if name not in keep]
    new = unique([*current, *(name for name in names if name not in keep)])
    if new != draft.snapshot.deprecated_variables:
        draft.set(deprecated_variables=new)


def add_gaps(
    draft: Draft,
    missing: Sequence[str],
    level: Literal["stage", "step", "behavior"],
    owner_id: str,
    *,
    effect: bool,
    reported: bool = False,
) -> None:
    """Record missing variables in ``gaps`` (and, for start checks, a WARN effect) (D15).

    ``reported`` marks gaps a stage reflection named (rather than found by a start check).
    """
    if not missing:
        return
    existing = {(gap.variable, gap.owner_id) for gap in draft.snapshot.gaps}
    gaps = list(draft.snapshot.gaps)
    texts: list[str] = []
    for name in missing:
        if (name, owner_id) in existing:
            continue
        gaps.append(Gap(variable=name, level=level, owner_id=owner_id, detected_at=draft.at))
        message = (
            f"gap reported for {level} {owner_id!r}: variable {name!r} is missing"
            if reported
            else f"required variable {name!r} for {level} {owner_id!r} is missing"
        )
        texts.append(warn_effect(message))
        draft.warn(message)
    update: dict[str, Any] = {"gaps": gaps}
    if effect and texts:
        update["effects"] = add_current(draft.snapshot.effects, texts)
    draft.set(**update)


def check_required(
    draft: Draft, item: PlanItem | None, level: Literal["stage", "step", "behavior"]
) -> None:
    """D15: required variables of a stage or step about to start; missing ones become gaps."""
    if item is None or not item.required_variables:
        return
    known = known_variables(draft.snapshot)
    missing = [name for name in item.required_variables if name not in known]
    add_gaps(draft, missing, level, item.id, effect=True)


def track(
    outputs: Outputs,
    *,
    produced: Sequence[str] = (),
    in_progress: Sequence[str] | None = None,
    expected: Sequence[str] = (),
    remaining: Sequence[str] = (),
) -> Outputs:
    """Outputs tracking moved: produced added, in progress replaced, expected widened.

    ``expected`` is everything the level is meant to produce, so it takes every name mentioned;
    nothing produced stays in progress.
    """
    done = unique([*outputs.produced, *produced])
    going = list(outputs.in_progress) if in_progress is None else list(in_progress)
    going = [name for name in unique(going) if name not in done]
    wanted = unique([*outputs.expected, *expected, *remaining, *going, *produced])
    return Outputs(
        expected=wanted, produced=done, in_progress=going, descriptions=dict(outputs.descriptions)
    )


def mark_produced(outputs: Outputs, names: Sequence[str]) -> Outputs:
    """Names this level expects (or has in progress) that are now produced."""
    relevant = [name for name in names if name in outputs.expected or name in outputs.in_progress]
    if not relevant:
        return outputs
    return track(outputs, produced=relevant)


def propagate_produced(draft: Draft, produced: Sequence[str]) -> None:
    """Mark artifacts produced at every level that expects them (behavior, step, stage)."""
    if not produced:
        return
    for level in ("behaviors", "steps", "stages"):
        progress = draft.level(level)
        outputs = mark_produced(progress.current_outputs, produced)
        if outputs != progress.current_outputs:
            draft.update_level(level, current_outputs=outputs)
