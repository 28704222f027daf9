"""The projection of a snapshot that planners receive (DESIGN §9 D21, PROTOCOL-NOTES).

Default shape (the reference client's)::

    {"observation": {"location": {"current", "progress", "goals"}},
     "state": {"variables", "effects", "notebook", "FSM", "acceptance", "gaps"}}

``fmt="context"`` gives seed 003's form: the state block under ``observation.context``, with the
FSM history tail. A ``context_filter`` (the planner's, kept on the snapshot by the last planning
response, or passed in) shapes it:

- ``variables_to_include`` / ``variables_to_summarize`` select variables (a name that does not
  exist adds the effect ``WARN: Variable 'x' not found``; when no included name exists, the
  listing falls back to the default: every variable, summarized), summarize strategies
  ``shape_only``, ``describe_only`` (type, shape, dtypes: no statistics are kept), ``head_only``
  and ``last_N_only``;
- ``effects_config``: include/limit current and history, ``patterns`` include/exclude regexes;
- ``focus_to_include``: the levels whose ``focus`` text is shown;
- ``outputs_tracking``: expected variables and which of them are still missing.

Shapes follow the reference client's documents (:mod:`.views`): artifact and variable specs as
``name: description`` maps at every level, remaining items with their specs, completed items
with what they were asked and how they ended, ``current_outputs.expected`` as ``{name,
description}``, variables as ``name: value``, ``notebook.cells`` (the newest cells in full) and
``last_output`` as recorded, ``FSM.last_transition`` as the reference spelled it.

Budget: every string is clipped with a marker, every list capped (with a count of what was left
out), the notebook given as a digest plus its newest cells; if the whole is still over
``max_chars``, it is rebuilt with halved caps (:func:`.views.trim_notes` lists what was cut).
Cost: O(variables + budget), whatever the notebook's length. The shape as pydantic models is in
:mod:`.observation_models`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import (
    AcceptanceResult,
    LevelProgress,
    VariableInfo,
    WorkflowSnapshot,
)
from notebook_bcc.protocol.planning import ContextFilter, SummarizeStrategy
from notebook_bcc.workflow.context import USER_VARIABLES, unique
from notebook_bcc.workflow.digest import NotebookDigest, digest_cells, last_cells
from notebook_bcc.workflow.views import (
    bounded,
    cells_view,
    clip,
    completed_view,
    item_view,
    outputs_view,
    remaining_view,
    variable_view,
)

__all__ = ["bounded", "clip", "item_view"]

ObservationFormat = Literal["state", "context"]
StateCase = Literal["upper", "lower"]

MORE_KEY = "…"
"""Key of the marker entry when variables are left out (never a Python identifier)."""


@dataclass(frozen=True)
class ObservationBudget:
    """Caps that keep an observation small, whatever the run's length."""

    max_value_chars: int = 800
    max_variables: int = 80
    max_dtypes: int = 20
    effects_current: int = 10
    effects_history: int = 5
    max_effect_chars: int = 2000
    completed_items: int = 10
    remaining_items: int = 20
    fsm_history: int = 10
    acceptance_behaviors: int = 5
    max_gaps: int = 30
    notebook_entries: int = 40
    notebook_line_chars: int = 120
    notebook_cells: int = 20
    max_cell_chars: int = 2000
    max_chars: int = 60_000

    def tighter(self) -> ObservationBudget:
        """The same budget with every cap halved (``max_chars`` kept)."""
        return replace(
            self,
            max_value_chars=max(self.max_value_chars // 2, 40),
            max_variables=max(self.max_variables // 2, 1),
            effects_current=max(self.effects_current // 2, 1),
            effects_history=self.effects_history // 2,
            max_effect_chars=max(self.max_effect_chars // 2, 80),
            completed_items=self.completed_items // 2,
            remaining_items=self.remaining_items // 2,
            fsm_history=self.fsm_history // 2,
            acceptance_behaviors=max(self.acceptance_behaviors // 2, 1),
            max_gaps=self.max_gaps // 2,
            notebook_entries=self.notebook_entries // 2,
            notebook_cells=self.notebook_cells // 2,
            max_cell_chars=max(self.max_cell_chars // 2, 80),
        )


DEFAULT_BUDGET = ObservationBudget()


# ---------------------------------------------------------------- variables


def _dtypes(dtypes: dict[str, str], budget: ObservationBudget) -> dict[str, str]:
    items = list(dtypes.items())
    kept = dict(items[: budget.max_dtypes])
    if len(items) > budget.max_dtypes:
        kept[MORE_KEY] = f"{len(items) - budget.max_dtypes} more columns"
    return kept


def _lines(info: VariableInfo) -> list[Any]:
    if isinstance(info.value, list):
        return list(info.value)
    if isinstance(info.value, str):
        return info.value.splitlines()
    return (info.repr or "").splitlines()


def _strategy_view(
    info: VariableInfo, strategy: SummarizeStrategy, budget: ObservationBudget
) -> dict[str, Any]:
    view: dict[str, Any] = {"type": info.type}
    if strategy.strategy in ("shape_only", "describe_only"):
        if info.shape is not None:
            view["shape"] = info.shape
        if info.length is not None:
            view["length"] = info.length
        if strategy.strategy == "describe_only" and info.dtypes:
            view["dtypes"] = _dtypes(info.dtypes, budget)
        return view
    lines = _lines(info)
    count = strategy.n or 5
    if strategy.strategy == "head_only":
        view["head"] = [bounded(line, budget.max_value_chars) for line in lines[:count]]
    else:
        view["tail"] = [bounded(line, budget.max_value_chars) for line in lines[-count:]]
    return view


def _default_view(info: VariableInfo, budget: ObservationBudget) -> Any:
    return variable_view(info, budget.max_value_chars, budget.max_dtypes)


def _user_variables(snapshot: WorkflowSnapshot) -> dict[str, VariableInfo]:
    found: dict[str, VariableInfo] = {}
    if snapshot.problem is not None and USER_VARIABLES[0] not in snapshot.variables:
        found[USER_VARIABLES[0]] = VariableInfo(type="str", value=snapshot.problem, source="user")
    if snapshot.files and USER_VARIABLES[1] not in snapshot.variables:
        found[USER_VARIABLES[1]] = VariableInfo(
            type="list", value=list(snapshot.files), length=len(snapshot.files), source="user"
        )
    return found


def project_variables(
    snapshot: WorkflowSnapshot, context_filter: ContextFilter | None, budget: ObservationBudget
) -> tuple[dict[str, Any], list[str]]:
    """The ``variables`` block and the WARN effects the filter caused."""
    users = _user_variables(snapshot)

    def lookup(name: str) -> VariableInfo | None:
        return snapshot.variables.get(name) or users.get(name)

    warnings: list[str] = []
    summarize: dict[str, SummarizeStrategy] = {}
    selected: list[str] | None = None
    if context_filter is not None:
        summarize = dict(context_filter.variables_to_summarize)
        include = unique(context_filter.variables_to_include)
        for name in include:
            if lookup(name) is None:
                warnings.append(f"WARN: Variable '{name}' not found")
        wanted = [name for name in unique([*include, *summarize]) if lookup(name) is not None]
        if wanted or not include:
            selected = wanted if (include or summarize) else None
    if selected is None:
        hidden = set(snapshot.deprecated_variables)
        selected = [*users, *(name for name in snapshot.variables if name not in hidden)]
    result: dict[str, Any] = {}
    for count, name in enumerate(selected):
        if count >= budget.max_variables:
            result[MORE_KEY] = f"{len(selected) - count} more variables not shown"
            break
        info = lookup(name)
        if info is None:
            continue
        strategy = summarize.get(name)
        if strategy is not None:
            result[name] = _strategy_view(info, strategy, budget)
        else:
            result[name] = _default_view(info, budget)
    return result, warnings


# ---------------------------------------------------------------- effects


def _pick(
    entries: Sequence[str],
    limit: int,
    include: list[re.Pattern[str]],
    exclude: list[re.Pattern[str]],
    budget: ObservationBudget,
) -> list[str]:
    picked: list[str] = []
    for entry in reversed(entries):
        if len(picked) >= limit:
            break
        if include and not any(p.search(entry) for p in include):
            continue
        if any(p.search(entry) for p in exclude):
            continue
        picked.append(clip(entry, budget.max_effect_chars))
    return picked[::-1]


def project_effects(
    snapshot: WorkflowSnapshot,
    context_filter: ContextFilter | None,
    budget: ObservationBudget,
    warnings: list[str],
) -> dict[str, list[str]]:
    """``effects``: current and a capped history, newest kept, filtered by the config."""
    config = None if context_filter is None else context_filter.effects_config
    include_current = (
        True if config is None or config.include_current is None else config.include_current
    )
    include_history = (
        True if config is None or config.include_history is None else config.include_history
    )
    current_limit = budget.effects_current
    history_limit = budget.effects_history
    include: list[re.Pattern[str]] = []
    exclude: list[re.Pattern[str]] = []
    if config is not None:
        if config.current_limit is not None:
            current_limit = min(config.current_limit, budget.effects_current)
        if config.history_limit is not None:
            history_limit = min(config.history_limit, budget.effects_history)
        if config.patterns is not None:
            include = [re.compile(p) for p in config.patterns.include]
            exclude = [re.compile(p) for p in config.patterns.exclude]
    effects = snapshot.effects
    current = (
        _pick(effects.current, current_limit, include, exclude, budget) if include_current else []
    )
    history = (
        _pick(effects.history, history_limit, include, exclude, budget) if include_history else []
    )
    return {"current": [*current, *warnings], "history": history}


# ---------------------------------------------------------------- location


def level_view(
    progress: LevelProgress, level: str, budget: ObservationBudget, show_focus: bool
) -> dict[str, Any]:
    """One level of ``progress`` with capped completed / remaining lists (see :mod:`.views`)."""
    limit = budget.max_value_chars
    completed = progress.completed
    shown_done = completed[-budget.completed_items :] if budget.completed_items else []
    remaining = progress.remaining[: budget.remaining_items]
    view: dict[str, Any] = {
        "completed": [completed_view(item, level, limit) for item in shown_done],
        "current": None if progress.current is None else item_view(progress.current, level, limit),
        "remaining": [remaining_view(item, level, limit) for item in remaining],
        "current_outputs": outputs_view(progress.current_outputs, limit),
    }
    if len(completed) > len(shown_done):
        view["completed_omitted"] = len(completed) - len(shown_done)
    if len(progress.remaining) > len(remaining):
        view["remaining_omitted"] = len(progress.remaining) - len(remaining)
    if show_focus and progress.focus:
        view["focus"] = clip(progress.focus, budget.max_value_chars)
    if level == "behaviors" and progress.iteration is not None:
        view["iteration"] = progress.iteration
    return view


def project_location(
    snapshot: WorkflowSnapshot, context_filter: ContextFilter | None, budget: ObservationBudget
) -> dict[str, Any]:
    """``observation.location``: current, progress at three levels, goals."""
    focus_levels = None
    if context_filter is not None and context_filter.focus_to_include:
        focus_levels = {_plural(level) for level in context_filter.focus_to_include}
    location = snapshot.location
    progress = {
        level: level_view(
            getattr(location.progress, level),
            level,
            budget,
            focus_levels is None or level in focus_levels,
        )
        for level in ("stages", "steps", "behaviors")
    }
    view: dict[str, Any] = {
        "current": location.current.model_dump(mode="json"),
        "progress": progress,
        "goals": None if location.goals is None else clip(location.goals, budget.max_value_chars),
    }
    if location.workflow_goals:
        view["workflow_goals"] = clip(location.workflow_goals, budget.max_value_chars)
    tracking = None if context_filter is None else context_filter.outputs_tracking
    if tracking is not None:
        present = set(snapshot.variables) | set(_user_variables(snapshot))
        expected = unique(tracking.expected_variables)
        view["outputs_tracking"] = {
            "expected_variables": expected,
            "validation_required": unique(tracking.validation_required),
            "missing": [name for name in expected if name not in present],
        }
    return view


def _plural(level: str) -> str:
    word = level.strip().lower()
    return word if word.endswith("s") else word + "s"


# ---------------------------------------------------------------- state block


def _state_name(state: State, case: StateCase) -> str:
    return state.value.upper() if case == "upper" else state.value


NotebookCells = NotebookDigest | Sequence[Any]


def project_notebook(
    snapshot: WorkflowSnapshot, cells: NotebookCells | None, budget: ObservationBudget
) -> dict[str, Any]:
    """``state.notebook``: the summary, and a digest of the cells when given."""
    notebook = snapshot.notebook
    view: dict[str, Any] = {
        "notebook_id": notebook.notebook_id,
        "title": notebook.title,
        "cell_count": notebook.cell_count,
        "execution_count": notebook.execution_count,
        "last_cell_type": notebook.last_cell_type,
        "last_output": bounded(notebook.last_output, budget.max_cell_chars),
    }
    if notebook.cells:
        view.update(cells_view(notebook.cells, budget.notebook_cells, budget.max_cell_chars))
    if cells is not None:
        if isinstance(cells, NotebookDigest):
            digest = cells.view(budget.notebook_entries, budget.notebook_line_chars)
            newest = cells.cells(budget.notebook_cells, budget.max_cell_chars)
        else:
            digest = digest_cells(cells, budget.notebook_entries, budget.notebook_line_chars)
            newest = last_cells(cells, budget.notebook_cells, budget.max_cell_chars)
        view["digest"] = digest
        if newest and "cells" not in view:
            view["cells"] = newest
            if digest["cell_count"] > len(newest):
                view["cells_omitted"] = digest["cell_count"] - len(newest)
        if view["title"] is None:
            view["title"] = digest["title"]
        view["cell_count"] = max(view["cell_count"], digest["cell_count"])
    return view


def project_fsm(
    snapshot: WorkflowSnapshot, budget: ObservationBudget, case: StateCase, with_history: bool
) -> dict[str, Any]:
    """``state.FSM``: state, last transition, timestamp (and the history tail on request)."""
    fsm = snapshot.fsm
    view: dict[str, Any] = {
        "state": _state_name(fsm.state, case),
        "last_transition": fsm.last_transition_name
        or (None if fsm.last_transition is None else fsm.last_transition.value),
        "timestamp": fsm.timestamp,
    }
    if with_history:
        tail = fsm.history[-budget.fsm_history :] if budget.fsm_history else []
        view["history"] = [
            {
                "from": _state_name(entry.from_state, case),
                "event": entry.event.value,
                "to": _state_name(entry.to, case),
                "timestamp": entry.timestamp,
            }
            for entry in tail
        ]
    return view


def project_acceptance(
    snapshot: WorkflowSnapshot, budget: ObservationBudget
) -> dict[str, dict[str, dict[str, Any]]]:
    """Acceptance results of the current step's behaviors (else the latest ones), clipped."""
    behaviors = snapshot.location.progress.behaviors
    ids = [item.id for item in behaviors.completed]
    if behaviors.current is not None:
        ids.append(behaviors.current.id)
    chosen = [key for key in unique(ids) if key in snapshot.acceptance]
    if not chosen:
        keys = list(snapshot.acceptance)
        chosen = keys[-budget.acceptance_behaviors :] if budget.acceptance_behaviors else []
    chosen = chosen[-budget.acceptance_behaviors :] if budget.acceptance_behaviors else []
    view: dict[str, dict[str, dict[str, Any]]] = {}
    for key in chosen:
        view[key] = {
            clip(criterion, budget.max_value_chars): _result(result, budget)
            for criterion, result in snapshot.acceptance[key].items()
        }
    return view


def _result(result: AcceptanceResult, budget: ObservationBudget) -> dict[str, Any]:
    view: dict[str, Any] = {"status": result.status}
    if result.message:
        view["message"] = clip(result.message, budget.max_value_chars)
    return view


def _state_block(
    snapshot: WorkflowSnapshot,
    context_filter: ContextFilter | None,
    budget: ObservationBudget,
    *,
    cells: NotebookCells | None,
    case: StateCase,
    with_history: bool,
) -> dict[str, Any]:
    variables, warnings = project_variables(snapshot, context_filter, budget)
    gaps = snapshot.gaps[-budget.max_gaps :] if budget.max_gaps else []
    block: dict[str, Any] = {
        "variables": variables,
        "effects": project_effects(snapshot, context_filter, budget, warnings),
        "notebook": project_notebook(snapshot, cells, budget),
        "FSM": project_fsm(snapshot, budget, case, with_history),
        "acceptance": project_acceptance(snapshot, budget),
        "gaps": [
            {"variable": gap.variable, "level": gap.level, "owner_id": gap.owner_id} for gap in gaps
        ],
    }
    if snapshot.deprecated_variables:
        block["deprecated_variables"] = list(snapshot.deprecated_variables)
    return block


def _filter(
    snapshot: WorkflowSnapshot, context_filter: ContextFilter | Mapping[str, Any] | None
) -> ContextFilter | None:
    if isinstance(context_filter, ContextFilter):
        return context_filter
    raw = context_filter if context_filter is not None else snapshot.context_filter
    return None if raw is None else ContextFilter.model_validate(raw)


def build_observation(
    snapshot: WorkflowSnapshot,
    *,
    context_filter: ContextFilter | Mapping[str, Any] | None = None,
    fmt: ObservationFormat = "state",
    budget: ObservationBudget = DEFAULT_BUDGET,
    cells: NotebookCells | None = None,
    state_case: StateCase = "upper",
) -> dict[str, Any]:
    """The observation a planner receives for ``snapshot`` (see the module docstring).

    ``context_filter`` defaults to the one the last planning response left on the snapshot.
    ``cells`` is a :class:`NotebookDigest` the engine keeps, or the cells themselves
    (``(cell_type, source)`` pairs or nbformat-like mappings) digested newest first.
    ``state_case`` spells FSM states as DSLC servers expect (uppercase by default, D21).
    """
    flt = _filter(snapshot, context_filter)
    current = budget
    doc: dict[str, Any] = {}
    for _ in range(5):
        location = project_location(snapshot, flt, current)
        block = _state_block(
            snapshot,
            flt,
            current,
            cells=cells,
            case=state_case,
            with_history=fmt == "context",
        )
        if fmt == "context":
            doc = {"observation": {"location": location, "context": block}}
        else:
            doc = {"observation": {"location": location}, "state": block}
        if observation_size(doc) <= budget.max_chars:
            break
        current = current.tighter()
    return doc


def observation_size(doc: Mapping[str, Any]) -> int:
    """Characters of ``doc`` as compact JSON (what the budget counts)."""
    return len(json.dumps(doc, ensure_ascii=False, separators=(",", ":"), default=str))
