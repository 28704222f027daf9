"""The observation planners receive: shapes (D21), context_filter, WARN rule, size budget."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any, overload

import pytest

from notebook_bcc.models.names import State
from notebook_bcc.models.snapshot import AcceptanceResult, VariableInfo, WorkflowSnapshot
from notebook_bcc.protocol.planning import ContextFilter
from notebook_bcc.workflow import (
    DEFAULT_BUDGET,
    NotebookDigest,
    Observation,
    build_observation,
    digest_cells,
    observation_size,
)
from tests.workflow.test_apply_chain import Run, snapshot_before


def _with(snapshot: WorkflowSnapshot, **update: Any) -> WorkflowSnapshot:
    return snapshot.model_copy(update=update)


def rich_snapshot() -> WorkflowSnapshot:
    """The chain at step_completed, with varied variables, effects and acceptance results."""
    snapshot = snapshot_before("08_stage_reflection_next_step.xml")
    variables = {
        **snapshot.variables,
        "corr": VariableInfo(
            type="DataFrame",
            shape=[38, 38],
            dtypes={f"c{i}": "float64" for i in range(30)},
            repr="\n".join(f"row {i}" for i in range(20)),
        ),
        "cv_log": VariableInfo(type="list", value=[f"fold {i}" for i in range(10)], length=10),
        "notes": VariableInfo(type="str", value="x" * 5000, source="planner"),
        "rmse": VariableInfo(type="float", value=23412.5),
    }
    effects = snapshot.effects.model_copy(
        update={
            "current": ["Warning: slow", "RMSE 23412", "R2 0.87", "done"],
            "history": [f"old {i}" for i in range(12)],
        }
    )
    acceptance = {
        "load_csv_b2": {
            "len(df_raw) > 2000": AcceptanceResult(status="passed"),
            "df_raw.isna().sum().sum() == 0": AcceptanceResult(status="failed", message="19 cols"),
        }
    }
    return _with(snapshot, variables=variables, effects=effects, acceptance=acceptance)


def test_default_shape_is_the_reference_clients() -> None:
    snapshot = rich_snapshot()
    doc = build_observation(snapshot)
    Observation.model_validate(doc)
    assert set(doc) == {"observation", "state"}
    assert set(doc["observation"]) == {"location"}
    location = doc["observation"]["location"]
    assert set(location) == {"current", "progress", "goals", "workflow_goals"}
    assert location["current"] == {
        "stage_id": "data_loading",
        "step_id": "load_csv",
        "behavior_id": None,
        "behavior_iteration": 0,
    }
    steps = location["progress"]["steps"]
    assert steps["current"]["step_id"] == "load_csv"
    assert steps["current"]["completion_status"] == "success"
    assert steps["current"]["pcs_considerations"]["computability"].startswith("pd.read_csv")
    assert steps["remaining"] == [
        {
            "step_id": "inventory",
            "title": "Data Inventory",
            "goal": "Build data_inventory: dtype and missing share of every column.",
            "verified_artifacts": {"data_inventory": "dict column -> {dtype, missing_share}"},
            "required_variables": {"df_raw": ""},
            "pcs_considerations": {"computability": "Pure pandas, deterministic."},
        }
    ]
    behaviors = location["progress"]["behaviors"]
    assert [b["behavior_id"] for b in behaviors["completed"]] == ["load_csv_b1", "load_csv_b2"]
    assert behaviors["iteration"] == 2
    state = doc["state"]
    assert set(state) == {"variables", "effects", "notebook", "FSM", "acceptance", "gaps"}
    assert state["FSM"] == {
        "state": "STEP_COMPLETED",
        "last_transition": "COMPLETE_STEP",
        "timestamp": snapshot.fsm.timestamp,
    }
    assert state["variables"]["user_problem"] == snapshot.problem
    assert state["variables"]["user_submit_files"] == ["./assets/housing.csv"]
    assert state["variables"]["df_raw"] == "DataFrame, shape (2930, 82)"
    assert state["variables"]["rmse"] == 23412.5
    assert state["acceptance"] == {
        "load_csv_b2": {
            "len(df_raw) > 2000": {"status": "passed"},
            "df_raw.isna().sum().sum() == 0": {"status": "failed", "message": "19 cols"},
        }
    }
    assert state["gaps"] == []


def test_context_form_puts_the_state_under_observation_context_with_history() -> None:
    snapshot = rich_snapshot()
    doc = build_observation(snapshot, fmt="context", state_case="lower")
    Observation.model_validate(doc)
    assert set(doc) == {"observation"}
    assert set(doc["observation"]) == {"location", "context"}
    fsm = doc["observation"]["context"]["FSM"]
    assert fsm["state"] == "step_completed"
    assert len(fsm["history"]) == DEFAULT_BUDGET.fsm_history
    last = fsm["history"][-1]
    assert last == {
        "from": "behavior_completed",
        "event": "COMPLETE_STEP",
        "to": "step_completed",
        "timestamp": snapshot.fsm.timestamp,
    }


def test_deprecated_variables_are_hidden_unless_included() -> None:
    snapshot = snapshot_before("09_behavior_inventory_b1.xml")
    assert snapshot.deprecated_variables == ["raw_path"]
    assert "raw_path" not in build_observation(snapshot)["state"]["variables"]
    included = build_observation(snapshot, context_filter={"variables_to_include": ["raw_path"]})
    assert set(included["state"]["variables"]) == {"raw_path"}


def test_include_and_summarize_strategies() -> None:
    flt = {
        "variables_to_include": ["df_raw", "rmse"],
        "variables_to_summarize": {
            "corr": "describe_only",
            "cv_log": {"strategy": "last_N_only", "n": 3},
            "notes": "head_only",
            "df_raw": "shape_only",
        },
    }
    variables = build_observation(rich_snapshot(), context_filter=flt)["state"]["variables"]
    assert list(variables) == ["df_raw", "rmse", "corr", "cv_log", "notes"]
    assert variables["df_raw"] == {"type": "DataFrame", "shape": [2930, 82]}
    assert variables["rmse"] == 23412.5
    assert variables["corr"]["shape"] == [38, 38]
    assert len(variables["corr"]["dtypes"]) == DEFAULT_BUDGET.max_dtypes + 1
    assert variables["corr"]["dtypes"]["…"] == "10 more columns"
    assert "repr" not in variables["corr"]
    assert variables["cv_log"] == {"type": "list", "tail": ["fold 7", "fold 8", "fold 9"]}
    assert variables["notes"]["head"][0].endswith("… [4200 more chars]")


def test_last_n_only_defaults_to_five_and_head_only_reads_the_repr() -> None:
    flt = {"variables_to_summarize": {"cv_log": "last_N_only", "corr": "head_only"}}
    variables = build_observation(rich_snapshot(), context_filter=flt)["state"]["variables"]
    assert variables["cv_log"]["tail"] == [f"fold {i}" for i in range(5, 10)]
    assert variables["corr"]["head"] == [f"row {i}" for i in range(5)]


def test_a_missing_included_variable_adds_the_warn_effect() -> None:
    flt = {"variables_to_include": ["df_raw", "ghost"]}
    doc = build_observation(rich_snapshot(), context_filter=flt)
    assert list(doc["state"]["variables"]) == ["df_raw"]
    assert doc["state"]["effects"]["current"][-1] == "WARN: Variable 'ghost' not found"


def test_when_no_included_variable_exists_the_listing_falls_back_to_all() -> None:
    snapshot = rich_snapshot()
    doc = build_observation(snapshot, context_filter={"variables_to_include": ["ghost"]})
    variables = doc["state"]["variables"]
    assert "df_raw" in variables
    assert "corr" in variables
    assert doc["state"]["effects"]["current"][-1] == "WARN: Variable 'ghost' not found"


def test_effects_config_limits_and_patterns() -> None:
    snapshot = rich_snapshot()
    flt = {
        "effects_config": {
            "include_current": True,
            "current_limit": 2,
            "include_history": False,
            "patterns": {"include": [r"RMSE\s+\d+", r"^R2", "Warning"], "exclude": ["^Warning"]},
        }
    }
    effects = build_observation(snapshot, context_filter=flt)["state"]["effects"]
    assert effects == {"current": ["RMSE 23412", "R2 0.87"], "history": []}
    default = build_observation(snapshot)["state"]["effects"]
    assert default["current"] == snapshot.effects.current
    assert default["history"] == [f"old {i}" for i in range(7, 12)]


def test_focus_levels_and_outputs_tracking() -> None:
    flt = {
        "focus_to_include": ["step"],
        "outputs_tracking": {"expected_variables": ["df_raw", "data_inventory"]},
    }
    location = build_observation(rich_snapshot(), context_filter=flt)["observation"]["location"]
    progress = location["progress"]
    assert "focus" in progress["steps"]
    assert "focus" not in progress["stages"]
    assert "focus" not in progress["behaviors"]
    assert location["outputs_tracking"] == {
        "expected_variables": ["df_raw", "data_inventory"],
        "validation_required": [],
        "missing": ["data_inventory"],
    }


def test_the_last_planning_filter_shapes_the_next_observation() -> None:
    run = Run(snapshot_before("04_reflection_load_continue.xml"))
    run.apply_text(
        json.dumps(
            {
                "targetAchieved": False,
                "context_filter": {"variables_to_include": ["nothing_here"]},
            }
        )
    )
    doc = build_observation(run.snapshot)
    assert doc["state"]["effects"]["current"][-1] == "WARN: Variable 'nothing_here' not found"
    explicit = build_observation(run.snapshot, context_filter=ContextFilter())
    assert "WARN: Variable 'nothing_here' not found" not in explicit["state"]["effects"]["current"]


def test_long_values_are_truncated_with_a_marker_and_lists_capped() -> None:
    snapshot = rich_snapshot()
    location = snapshot.location
    many = [
        location.progress.behaviors.completed[0].model_copy(update={"id": f"b{i}"})
        for i in range(40)
    ]
    progress = location.progress.model_copy(
        update={"behaviors": location.progress.behaviors.model_copy(update={"completed": many})}
    )
    snapshot = _with(
        snapshot,
        location=location.model_copy(update={"progress": progress}),
        effects=snapshot.effects.model_copy(update={"current": ["y" * 10_000]}),
    )
    doc = build_observation(snapshot)
    assert doc["state"]["variables"]["notes"] == "x" * 800 + "… [4200 more chars]"
    assert doc["state"]["effects"]["current"] == ["y" * 2000 + "… [8000 more chars]"]
    behaviors = doc["observation"]["location"]["progress"]["behaviors"]
    assert len(behaviors["completed"]) == DEFAULT_BUDGET.completed_items
    assert behaviors["completed_omitted"] == 30
    assert behaviors["completed"][-1]["behavior_id"] == "b39"


def test_many_variables_are_capped_with_a_marker() -> None:
    variables = {f"v{i}": VariableInfo(type="int", value=i) for i in range(500)}
    snapshot = _with(rich_snapshot(), variables=variables)
    shown = build_observation(snapshot)["state"]["variables"]
    assert len(shown) == DEFAULT_BUDGET.max_variables + 1
    assert shown["…"] == f"{500 + 2 - DEFAULT_BUDGET.max_variables} more variables not shown"


class CountingCells(Sequence[tuple[str, str]]):
    """A cell list that counts how many cells are read."""

    def __init__(self, cells: list[tuple[str, str]]) -> None:
        self.cells = cells
        self.reads = 0

    def __len__(self) -> int:
        return len(self.cells)

    @overload
    def __getitem__(self, index: int) -> tuple[str, str]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, str]]: ...
    def __getitem__(self, index: int | slice) -> Any:
        self.reads += 1
        return self.cells[index]

    def __iter__(self) -> Iterator[tuple[str, str]]:
        raise AssertionError("the digest must not iterate the whole notebook")


def notebook_cells(count: int) -> list[tuple[str, str]]:
    """A long notebook: a title, then sections of a heading, prose and two code cells."""
    cells: list[tuple[str, str]] = [("markdown", "# Ames Housing Price Prediction\n\nintro")]
    section = 0
    while len(cells) < count:
        section += 1
        cells.append(("markdown", f"## Section {section}"))
        cells.append(("markdown", "Some explanation " * 50))
        cells.append(("code", f"\n# step {section}\ndf_{section} = df.copy()\n" + "x = 1\n" * 200))
        cells.append(("code", f"print(df_{section}.shape)  " + "#" * 500))
    return cells[:count]


def test_a_2000_cell_notebook_fits_the_budget_reading_a_bounded_number_of_cells() -> None:
    cells = CountingCells(notebook_cells(2000))
    snapshot = _with(
        rich_snapshot(),
        notebook=rich_snapshot().notebook.model_copy(update={"cell_count": 2000}),
    )
    budget = replace(DEFAULT_BUDGET, max_chars=20_000)
    doc = build_observation(snapshot, cells=cells, budget=budget)
    assert observation_size(doc) <= 20_000
    digest = doc["state"]["notebook"]["digest"]
    assert digest["title"] == "Ames Housing Price Prediction"
    assert digest["cell_count"] == 2000
    shown = len(digest["headings"]) + len(digest["code"])
    assert 0 < shown <= DEFAULT_BUDGET.notebook_entries
    assert digest["more"] == f"{2000 - shown} more cells not shown"
    assert digest["code"][-1] == "[2000] # step 500"
    assert digest["code"][-2].startswith("[1997] print(df_499.shape)")
    assert digest["code"][-2].endswith("…")
    assert all(len(line) <= DEFAULT_BUDGET.notebook_line_chars for line in digest["code"])
    assert digest["headings"][-1] == "[1998] ## Section 500"
    newest = doc["state"]["notebook"]["cells"]
    assert (newest[-1]["index"], newest[-1]["cell_type"]) == (2000, "code")
    assert newest[-1]["source"].startswith("\n# step 500\ndf_500 = df.copy()\nx = 1\n")
    assert newest[-1]["source"].endswith(" more chars]")
    assert [cell["index"] for cell in newest] == list(range(2001 - len(newest), 2001))
    assert doc["state"]["notebook"]["cells_omitted"] == 2000 - len(newest)
    # each build reads the digest's cells and the newest full cells; the budget may rebuild
    # the observation a few times: bounded by the budget, never by the notebook's length
    per_build = 1 + 2 * DEFAULT_BUDGET.notebook_entries + DEFAULT_BUDGET.notebook_cells
    assert cells.reads <= 2 * per_build
    Observation.model_validate(doc)


def test_an_incremental_digest_keeps_the_outline() -> None:
    cells = notebook_cells(2000)
    digest = NotebookDigest().extend(cells)
    assert digest.cell_count == 2000
    view = digest.view(40)
    assert view["title"] == "Ames Housing Price Prediction"
    assert view["headings"][:2] == ["[1] # Ames Housing Price Prediction", "[2] ## Section 1"]
    assert len(view["headings"]) == 20
    assert len(view["code"]) == 20
    assert view["code"][-1] == "[2000] # step 500"
    assert view["more"] == "1960 more cells not shown"
    doc = build_observation(rich_snapshot(), cells=digest)
    assert doc["state"]["notebook"]["digest"] == view
    assert doc["state"]["notebook"]["title"] == "Ames Housing Price Prediction"


def test_digest_reads_nbformat_cells_and_line_lists() -> None:
    cells = [
        {"cell_type": "markdown", "source": ["# Title\n", "text"]},
        {"cell_type": "raw", "source": "ignored"},
        {"cell_type": "code", "source": ["\n", "import pandas as pd\n"]},
        {"cell_type": "markdown", "source": ""},
    ]
    view = digest_cells(cells, entries=10)
    assert view == {
        "title": "Title",
        "cell_count": 4,
        "headings": ["[1] # Title"],
        "code": ["[3] import pandas as pd"],
        "more": "2 more cells not shown",
    }


def test_an_observation_over_budget_is_rebuilt_tighter() -> None:
    variables = {f"v{i}": VariableInfo(type="str", value="z" * 700) for i in range(80)}
    snapshot = _with(rich_snapshot(), variables=variables)
    budget = replace(DEFAULT_BUDGET, max_chars=15_000)
    doc = build_observation(snapshot, budget=budget, cells=notebook_cells(300))
    assert observation_size(doc) <= 15_000
    assert "…" in doc["state"]["variables"]


@pytest.mark.parametrize("state", [State.IDLE, State.WORKFLOW_COMPLETED])
def test_an_empty_snapshot_observes(state: State) -> None:
    snapshot = Run().snapshot
    snapshot = _with(snapshot, fsm=snapshot.fsm.model_copy(update={"state": state}))
    doc = build_observation(snapshot)
    Observation.model_validate(doc)
    assert doc["state"]["FSM"]["state"] == state.value.upper()
    assert doc["observation"]["location"]["progress"]["stages"]["current"] is None
