"""A chained housing-price run through the apply layer, every intermediate snapshot checked.

idle -> stages -> steps -> behavior -> actions -> reflection (continue) -> behavior (re-plan)
-> actions -> reflection (complete) -> stage_reflection (next step) -> behavior -> actions
-> signals (step complete) -> stage_reflection (stage complete) -> navigate (next stage).
The payloads under ``tests/fixtures/apply`` are malformed the way LLM output is (prose around
the XML, a code fence, raw ``<`` and ``&``, bare attributes); the parse layer repairs them.

The helpers here (:class:`Run`, :func:`chain_until`) are shared by the other apply tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import (
    ActionQueue,
    CurrentLocation,
    Gap,
    LevelProgress,
    Outputs,
    PlanItem,
    VariableInfo,
    WorkflowSnapshot,
    new_snapshot,
)
from notebook_bcc.protocol import parse_payload
from notebook_bcc.workflow import (
    Applied,
    ApplyOptions,
    apply_text,
    complete_action,
    navigate,
)
from tests.conftest import FIXTURES

APPLY_FIXTURES = FIXTURES / "apply"
E = Event

CHAIN = (
    "00_stages.txt",
    "01_steps_loading.xml",
    "02_behavior_load_b1.xml",
    "03_actions_load_b1.xml",
    "04_reflection_load_continue.xml",
    "05_behavior_load_b2.txt",
    "06_actions_load_b2.ndjson",
    "07_reflection_load_complete.xml",
    "08_stage_reflection_next_step.xml",
    "09_behavior_inventory_b1.xml",
    "10_actions_inventory_b1.json",
    "11_signals_inventory.ndjson",
    "12_stage_reflection_complete.xml",
)
"""The fixture payloads in the order a run receives them."""

EXECUTION_OUTPUTS: dict[str, list[list[str]]] = {
    "03_actions_load_b1.xml": [
        [],
        [],
        [],
        ["FileNotFoundError: [Errno 2] No such file or directory: 'housing.csv'"],
    ],
    "06_actions_load_b2.ndjson": [[], [], ["(2930, 82)\n"]],
    "10_actions_inventory_b1.json": [[], [], ["82\n"]],
}
"""What the (simulated) engine's cells print, per action of each actions payload."""

KERNEL_PROBES: dict[str, dict[str, VariableInfo]] = {
    "06_actions_load_b2.ndjson": {
        "df_raw": VariableInfo(type="DataFrame", shape=[2930, 82], source="kernel"),
    },
    "10_actions_inventory_b1.json": {
        "data_inventory": VariableInfo(type="dict", length=82, source="kernel"),
    },
}
"""Variables the (simulated) kernel probe finds after each behavior's actions."""


def fixture_path(name: str) -> Path:
    """A fixture of the chained run."""
    return APPLY_FIXTURES / name


def fixture_bytes(name: str) -> bytes:
    """The bytes of a chained-run fixture."""
    return fixture_path(name).read_bytes()


def start_snapshot() -> WorkflowSnapshot:
    """The idle snapshot the chained run starts from."""
    return new_snapshot(
        "housing",
        "run-1",
        problem="Predict SalePrice; test RMSE < 25000",
        files=["./assets/housing.csv"],
    )


class Run:
    """Drives a snapshot through payloads and simulated engine steps, with clock ticks."""

    def __init__(self, snapshot: WorkflowSnapshot | None = None) -> None:
        self.snapshot = snapshot or start_snapshot()
        self.tick = 0
        self.fired: list[Event] = []

    def at(self) -> str:
        """The next timestamp (one second later each call)."""
        self.tick += 1
        return f"2025-03-01T09:{self.tick // 60:02d}:{self.tick % 60:02d}Z"

    def _took(self, applied: Applied) -> Applied:
        self.snapshot = applied.snapshot
        self.fired.extend(applied.events)
        return applied

    def apply(self, name: str, *, max_iterations: int = 3) -> Applied:
        """Apply the fixture payload ``name``."""
        return self.apply_text(fixture_bytes(name), max_iterations=max_iterations)

    def apply_text(
        self, text: str | bytes, kind: str = "auto", *, max_iterations: int = 3
    ) -> Applied:
        """Apply a payload given as text."""
        applied = apply_text(self.snapshot, text, kind, at=self.at(), max_iterations=max_iterations)
        return self._took(applied)

    def navigate(self) -> Applied:
        """The client's navigation move."""
        return self._took(
            navigate(self.snapshot, options=ApplyOptions(actor="client", at=self.at()))
        )

    def execute(self, outputs: Sequence[Sequence[str]]) -> list[Event]:
        """Run the queued actions as the engine would: COMPLETE_ACTION, then navigate."""
        events: list[Event] = []
        for index in range(len(self.snapshot.action_queue.actions)):
            effects = outputs[index] if index < len(outputs) else []
            options = ApplyOptions(actor="client", at=self.at())
            done = self._took(complete_action(self.snapshot, effects=effects, options=options))
            events.extend(done.events)
            events.extend(self.navigate().events)
        return events

    def probe(self, variables: dict[str, VariableInfo]) -> None:
        """The kernel probe after a behavior: the variables it found."""
        self.snapshot = self.snapshot.model_copy(
            update={"variables": {**self.snapshot.variables, **variables}}
        )


def chain_until(stop: str | None = None) -> Run:
    """Run the chain up to (not including) the fixture ``stop``; the whole chain when None.

    Actions are executed and probes applied as the engine would; after the last fixture the
    client navigates out of ``stage_completed``.
    """
    run = Run()
    for name in CHAIN:
        if name == stop:
            return run
        run.apply(name)
        if name in EXECUTION_OUTPUTS:
            run.execute(EXECUTION_OUTPUTS[name])
            run.probe(KERNEL_PROBES.get(name, {}))
    if run.snapshot.fsm.state is State.STAGE_COMPLETED:
        run.navigate()
    return run


@cache
def snapshot_before(stop: str | None = None) -> WorkflowSnapshot:
    """The chain's snapshot just before the fixture ``stop`` arrives (cached; never mutated)."""
    return chain_until(stop).snapshot


def at_state(snapshot: WorkflowSnapshot, state: State) -> WorkflowSnapshot:
    """``snapshot`` with its FSM forced into ``state`` (to test payloads arriving there)."""
    return snapshot.model_copy(update={"fsm": snapshot.fsm.model_copy(update={"state": state})})


def ids(items: Sequence[PlanItem]) -> list[str]:
    """The ids of plan items."""
    return [item.id for item in items]


def test_fixtures_are_malformed_like_llm_output_and_repaired() -> None:
    repaired = {
        name: parse_payload(fixture_bytes(name))
        for name in ("00_stages.txt", "03_actions_load_b1.xml", "05_behavior_load_b2.txt")
    }
    stages = repaired["00_stages.txt"]
    kinds = {note.kind for note in stages.repairs}
    assert {"dropped_prose", "bare_attribute", "escaped_char", "dropped_trailing"} <= kinds
    actions = repaired["03_actions_load_b1.xml"]
    assert actions.repaired
    behavior = repaired["05_behavior_load_b2.txt"]
    assert behavior.kind == "behavior"
    assert behavior.acceptance[0].expression == "len(df_raw) > 2000 & df_raw.shape[1] >= 80"


def test_chained_housing_run_field_by_field() -> None:
    run = Run()
    at0 = "2025-03-01T09:00:01Z"

    # 00 stages at idle -> START_WORKFLOW
    applied = run.apply("00_stages.txt")
    snap = applied.snapshot
    assert applied.events == [E.START_WORKFLOW]
    assert applied.warnings == []
    assert applied.repairs == [
        "repaired line 1: text before the root element dropped",
        "repaired line 7: <goal>: '&' kept as text",
        "repaired line 17: <goal>: '<' kept as text",
        'repaired line 21: <stage>: optional given the value "true"',
        "repaired line 27: <goal>: '<' kept as text",
        "repaired line 32: <focus>: '<' kept as text",
        "repaired line 32: <focus>: '&' kept as text",
        "repaired line 33: <goals>: '<' kept as text",
        "repaired line 34: text after the root element dropped",
    ]
    assert snap.fsm.state is State.STAGE_RUNNING
    assert snap.fsm.last_transition is E.START_WORKFLOW
    assert snap.fsm.timestamp == at0
    assert [(h.from_state, h.event, h.to, h.actor, h.timestamp) for h in snap.fsm.history] == [
        (State.IDLE, E.START_WORKFLOW, State.STAGE_RUNNING, "planner", at0)
    ]
    stages = snap.location.progress.stages
    assert stages.completed == []
    assert stages.current is not None
    assert stages.current.id == "data_loading"
    assert stages.current.title == "Data Loading"
    assert stages.current.visits == 1
    assert stages.current.verified_artifacts == {
        "df_raw": "Raw housing DataFrame",
        "data_inventory": "Column -> dtype / missing share report",
    }
    assert stages.current.required_variables == {"user_submit_files": "Uploaded CSV paths"}
    assert stages.current.goal is not None
    assert "len(df_raw) > 0 & df_raw.shape[1] >= 80" in stages.current.goal
    assert ids(stages.remaining) == ["data_cleaning", "eda", "modeling"]
    assert [s.optional for s in stages.remaining] == [False, True, False]
    assert stages.remaining[0].required_variables == {"df_raw": ""}
    assert stages.remaining[2].verified_artifacts == {"final_model": "", "test_rmse": ""}
    assert (
        stages.focus == "RMSE < 25000 & R² > 0.85 on a held-out split; random_state=42 everywhere."
    )
    assert stages.current_outputs == Outputs(
        expected=["df_raw", "data_inventory"],
        descriptions={
            "df_raw": "Raw housing DataFrame",
            "data_inventory": "Column -> dtype / missing share report",
        },
    )
    assert snap.location.progress.steps == LevelProgress()
    assert snap.location.progress.behaviors == LevelProgress()
    assert snap.location.current == CurrentLocation(stage_id="data_loading")
    assert snap.location.workflow_goals == (
        "A reproducible house price model with test RMSE < 25000."
    )
    assert snap.location.goals == stages.current.goal
    assert snap.gaps == []
    assert snap.metrics.overall_progress == 0.0
    assert snap.metrics.variable_coverage == 1.0

    # 01 steps at stage_running -> START_STEP
    applied = run.apply("01_steps_loading.xml")
    snap = applied.snapshot
    assert applied.events == [E.START_STEP]
    assert snap.fsm.state is State.STEP_RUNNING
    steps = snap.location.progress.steps
    assert steps.completed == []
    assert steps.current is not None
    assert steps.current.id == "load_csv"
    assert steps.current.visits == 1
    assert steps.current.verified_artifacts == {"df_raw": "Raw DataFrame"}
    assert steps.current.required_variables == {"user_submit_files": ""}
    assert steps.current.pcs_considerations is not None
    assert (
        steps.current.pcs_considerations.stability
        == "Row count must match the file's line count - 1."
    )
    assert ids(steps.remaining) == ["inventory"]
    assert steps.remaining[0].required_variables == {"df_raw": ""}
    assert steps.remaining[0].verified_artifacts == {
        "data_inventory": "dict column -> {dtype, missing_share}"
    }
    assert steps.focus == "Load first; inventory only once df_raw exists."
    assert steps.current_outputs == Outputs(
        expected=["df_raw"], descriptions={"df_raw": "Raw DataFrame"}
    )
    stage = snap.location.progress.stages.current
    assert stage is not None
    assert stage.extra["goals"] == "df_raw and data_inventory exist; df_raw has 82 columns."
    assert snap.location.current == CurrentLocation(stage_id="data_loading", step_id="load_csv")
    assert snap.metrics.stage_progress == 0.0

    # 02 behavior at step_running -> START_BEHAVIOR
    applied = run.apply("02_behavior_load_b1.xml")
    snap = applied.snapshot
    assert applied.events == [E.START_BEHAVIOR]
    assert snap.fsm.state is State.BEHAVIOR_RUNNING
    behaviors = snap.location.progress.behaviors
    assert behaviors.completed == []
    assert behaviors.iteration == 1
    behavior = behaviors.current
    assert behavior is not None
    assert behavior.id == "load_csv_b1"
    assert behavior.agent == "DataLoadAgent"
    assert behavior.iteration == 1
    assert behavior.inputs == {"user_submit_files": "['housing.csv']"}
    assert behavior.outputs == {"df_raw": "pandas.DataFrame"}
    assert behavior.acceptance == [
        "len(df_raw) > 2000",
        "df_raw.shape[1] >= 80 and df_raw['SalePrice'].min() > 0",
    ]
    assert behavior.extra["step_id"] == "load_csv"
    assert behaviors.focus == behavior.task
    assert behaviors.current_outputs == Outputs(
        expected=["df_raw"], descriptions={"df_raw": "pandas.DataFrame"}
    )
    assert snap.location.current == CurrentLocation(
        stage_id="data_loading", step_id="load_csv", behavior_id="load_csv_b1", behavior_iteration=1
    )
    assert snap.action_queue == ActionQueue(behavior_id="load_csv_b1", iteration=1)

    # 03 actions at behavior_running -> START_ACTION; the engine runs them
    applied = run.apply("03_actions_load_b1.xml")
    snap = applied.snapshot
    assert applied.events == [E.START_ACTION]
    assert snap.fsm.state is State.ACTION_RUNNING
    queue = snap.action_queue
    assert [a.type for a in queue.actions] == ["update_title", "add", "add", "exec"]
    assert queue.actions[0].title == "Ames Housing Price Prediction"
    assert (
        queue.actions[1].content == "We load the uploaded file & check that no sale price is < 0."
    )
    assert queue.actions[2].content == (
        "import pandas as pd\n"
        "df_raw = pd.read_csv(user_submit_files[0])\n"
        'bad = df_raw[df_raw["SalePrice"] < 0]\n'
        "print(df_raw.shape, len(bad) == 0 & True)"
    )
    assert queue.actions[3].codecell_id == "lastAddedCellId"
    assert (queue.behavior_id, queue.iteration, queue.index) == ("load_csv_b1", 1, 0)
    assert len(applied.actions) == 4
    events = run.execute(EXECUTION_OUTPUTS["03_actions_load_b1.xml"])
    assert events == [E.COMPLETE_ACTION, E.NEXT_ACTION] * 3 + [
        E.COMPLETE_ACTION,
        E.COMPLETE_BEHAVIOR,
    ]
    snap = run.snapshot
    assert snap.fsm.state is State.BEHAVIOR_COMPLETED
    assert snap.action_queue.index == 4
    failure = "FileNotFoundError: [Errno 2] No such file or directory: 'housing.csv'"
    assert snap.effects.current == [failure]

    # 04 reflection (continue) at behavior_completed -> NEXT_BEHAVIOR
    applied = run.apply("04_reflection_load_continue.xml")
    snap = applied.snapshot
    assert applied.events == [E.NEXT_BEHAVIOR]
    assert applied.warnings == []
    assert snap.fsm.state is State.BEHAVIOR_RUNNING
    behaviors = snap.location.progress.behaviors
    assert ids(behaviors.completed) == ["load_csv_b1"]
    first = behaviors.completed[0]
    assert first.completion_status == "failed"
    assert first.artifacts_produced == []
    assert first.whathappened == "read_csv failed: the path is relative to the notebook folder."
    assert behaviors.current is not None
    assert behaviors.current.id == "load_csv_b1"
    assert behaviors.current.iteration == 2
    assert behaviors.current.completion_status is None
    assert behaviors.iteration == 2
    assert snap.location.current.behavior_iteration == 2
    assert snap.effects.current == []
    assert snap.effects.history == [failure]
    steps = snap.location.progress.steps
    assert steps.current_outputs == Outputs(
        expected=["df_raw"], in_progress=["df_raw"], descriptions={"df_raw": "Raw DataFrame"}
    )
    assert snap.action_queue == ActionQueue(behavior_id="load_csv_b1", iteration=2)
    assert snap.metrics.retry_rate == 0.5

    # 05 behavior in prose and a fence, at behavior_running before any action: re-plan, no event
    history_before = list(snap.fsm.history)
    applied = run.apply("05_behavior_load_b2.txt")
    snap = applied.snapshot
    assert applied.events == []
    assert [(row.action, row.metadata) for row in applied.records] == [
        ("repair:behavior", {"repairs": applied.repairs})
    ]
    assert applied.repairs[0] == "repaired line 1: text before the root element dropped"
    assert applied.repairs[-1] == "repaired line 16: text after the root element dropped"
    assert applied.warnings == ["behavior 'load_csv_b2' re-plans iteration 2 (no FSM event)"]
    assert snap.fsm.state is State.BEHAVIOR_RUNNING
    assert snap.fsm.history == history_before
    behaviors = snap.location.progress.behaviors
    assert behaviors.current is not None
    assert behaviors.current.id == "load_csv_b2"
    assert behaviors.current.iteration == 2
    assert behaviors.current.inputs == {"user_submit_files": "['./assets/housing.csv']"}
    assert ids(behaviors.completed) == ["load_csv_b1"]
    assert snap.location.current.behavior_id == "load_csv_b2"
    assert snap.action_queue == ActionQueue(behavior_id="load_csv_b2", iteration=2)

    # 06 NDJSON actions (last line without newline) -> START_ACTION; run; probe
    applied = run.apply("06_actions_load_b2.ndjson")
    assert applied.events == [E.START_ACTION]
    assert [a.type for a in applied.snapshot.action_queue.actions] == ["add", "add", "exec"]
    events = run.execute(EXECUTION_OUTPUTS["06_actions_load_b2.ndjson"])
    assert events[-1] is E.COMPLETE_BEHAVIOR
    run.probe(KERNEL_PROBES["06_actions_load_b2.ndjson"])
    assert run.snapshot.effects.current == ["(2930, 82)\n"]

    # 07 reflection (complete) -> COMPLETE_STEP
    applied = run.apply("07_reflection_load_complete.xml")
    snap = applied.snapshot
    assert applied.events == [E.COMPLETE_STEP]
    assert snap.fsm.state is State.STEP_COMPLETED
    behaviors = snap.location.progress.behaviors
    assert ids(behaviors.completed) == ["load_csv_b1", "load_csv_b2"]
    assert [b.completion_status for b in behaviors.completed] == ["failed", "success"]
    assert behaviors.completed[1].artifacts_produced == ["df_raw"]
    assert (
        behaviors.completed[1].whathappened
        == "df_raw loaded from ./assets/housing.csv: (2930, 82)."
    )
    assert behaviors.current is None
    assert behaviors.current_outputs == Outputs(
        expected=["df_raw"],
        produced=["df_raw"],
        descriptions={"df_raw": "pandas.DataFrame (2930 x 82)"},
    )
    steps = snap.location.progress.steps
    assert steps.current is not None
    assert steps.current.completion_status == "success"
    assert steps.current.iteration == 2
    assert steps.current.artifacts_produced == ["df_raw"]
    assert steps.current_outputs == Outputs(
        expected=["df_raw"], produced=["df_raw"], descriptions={"df_raw": "Raw DataFrame"}
    )
    assert snap.location.progress.stages.current_outputs == Outputs(
        expected=["df_raw", "data_inventory"],
        produced=["df_raw"],
        descriptions={
            "df_raw": "Raw housing DataFrame",
            "data_inventory": "Column -> dtype / missing share report",
        },
    )
    assert snap.variables["df_raw"] == VariableInfo(
        type="DataFrame", shape=[2930, 82], source="kernel"
    )
    assert snap.variables["raw_path"] == VariableInfo(
        type="str", repr="'./assets/housing.csv'", source="planner"
    )
    assert snap.location.current == CurrentLocation(stage_id="data_loading", step_id="load_csv")
    assert snap.effects.current == ["(2930, 82)\n"]
    assert snap.metrics.stage_progress == 0.5
    assert snap.metrics.artifact_completion == 0.5

    # 08 stage reflection (next step) -> NEXT_STEP
    applied = run.apply("08_stage_reflection_next_step.xml")
    snap = applied.snapshot
    assert applied.events == [E.NEXT_STEP]
    assert applied.warnings == []
    assert snap.fsm.state is State.STEP_RUNNING
    steps = snap.location.progress.steps
    assert ids(steps.completed) == ["load_csv"]
    assert steps.completed[0].completion_status == "success"
    assert steps.current is not None
    assert steps.current.id == "inventory"
    assert steps.current.visits == 1
    assert steps.remaining == []
    assert steps.focus == "Inventory dtypes and missing shares; flag columns with share > 0.3."
    assert steps.current_outputs == Outputs(
        expected=["data_inventory"],
        descriptions={"data_inventory": "dict column -> {dtype, missing_share}"},
    )
    assert snap.location.progress.behaviors == LevelProgress()
    assert snap.deprecated_variables == ["raw_path"]
    assert snap.location.current == CurrentLocation(stage_id="data_loading", step_id="inventory")
    assert snap.gaps == []

    # 09 behavior -> START_BEHAVIOR; D12: the finished behavior's effects go to history now
    applied = run.apply("09_behavior_inventory_b1.xml")
    snap = applied.snapshot
    assert applied.events == [E.START_BEHAVIOR]
    assert snap.location.progress.behaviors.iteration == 1
    assert snap.effects.current == []
    assert snap.effects.history == [failure, "(2930, 82)\n"]

    # 10 JSON actions document -> START_ACTION; run; probe
    applied = run.apply("10_actions_inventory_b1.json")
    assert applied.events == [E.START_ACTION]
    queue = applied.snapshot.action_queue
    assert [a.type for a in queue.actions] == ["new_section", "add", "exec"]
    run.execute(EXECUTION_OUTPUTS["10_actions_inventory_b1.json"])
    run.probe(KERNEL_PROBES["10_actions_inventory_b1.json"])
    assert run.snapshot.fsm.state is State.BEHAVIOR_COMPLETED

    # 11 reflecting control signals: mark_step_complete -> COMPLETE_STEP
    applied = run.apply("11_signals_inventory.ndjson")
    snap = applied.snapshot
    assert applied.events == [E.COMPLETE_STEP]
    assert [a.type for a in applied.actions] == ["add-text"]
    behaviors = snap.location.progress.behaviors
    assert ids(behaviors.completed) == ["inventory_b1"]
    assert behaviors.completed[0].completion_status == "success"
    assert behaviors.completed[0].artifacts_produced == ["data_inventory"]
    assert behaviors.completed[0].whathappened == "data_inventory built for 82 columns"
    steps = snap.location.progress.steps
    assert steps.current is not None
    assert steps.current.completion_status == "success"
    assert steps.current.iteration == 1
    assert steps.current_outputs == Outputs(
        expected=["data_inventory"],
        produced=["data_inventory"],
        descriptions={"data_inventory": "dict column -> {dtype, missing_share}"},
    )
    assert snap.location.progress.stages.current_outputs == Outputs(
        expected=["df_raw", "data_inventory"],
        produced=["df_raw", "data_inventory"],
        descriptions={
            "df_raw": "Raw housing DataFrame",
            "data_inventory": "Column -> dtype / missing share report",
        },
    )
    assert snap.variables["data_inventory"].source == "kernel"

    # 12 stage reflection (bare stage_is_complete) -> COMPLETE_STAGE
    applied = run.apply("12_stage_reflection_complete.xml")
    snap = applied.snapshot
    at12 = snap.fsm.timestamp
    assert applied.events == [E.COMPLETE_STAGE]
    assert applied.warnings == [
        "gap reported for stage 'data_loading': variable 'target_log' is missing"
    ]
    assert snap.fsm.state is State.STAGE_COMPLETED
    assert snap.gaps == [
        Gap(variable="target_log", level="stage", owner_id="data_loading", detected_at=str(at12))
    ]
    steps = snap.location.progress.steps
    assert ids(steps.completed) == ["load_csv", "inventory"]
    assert steps.current is None
    stage = snap.location.progress.stages.current
    assert stage is not None
    assert stage.completion_status == "success"
    assert stage.artifacts_produced == ["df_raw", "data_inventory"]
    assert stage.extra["experience"] == "Paths are relative to the notebook folder; use ./assets/."
    assert stage.extra["goal_status"] == "achieved"
    assert stage.extra["step_results"] == [
        {"id": "load_csv", "completion_status": "success", "iteration": 2},
        {"id": "inventory", "completion_status": "success", "iteration": 1},
    ]
    assert snap.location.current == CurrentLocation(stage_id="data_loading")
    assert snap.metrics.stage_progress == 1.0
    assert snap.metrics.overall_progress == 0.25
    assert snap.metrics.artifact_completion == 1.0
    assert snap.metrics.retry_rate == round(1 / 3, 6)

    # the client navigates: stages remain -> NEXT_STAGE
    applied = run.navigate()
    snap = applied.snapshot
    assert applied.events == [E.NEXT_STAGE]
    assert snap.fsm.state is State.STAGE_RUNNING
    assert snap.fsm.history[-1].actor == "client"
    stages = snap.location.progress.stages
    assert ids(stages.completed) == ["data_loading"]
    assert stages.completed[0].completion_status == "success"
    assert stages.current is not None
    assert stages.current.id == "data_cleaning"
    assert stages.current.visits == 1
    assert ids(stages.remaining) == ["eda", "modeling"]
    assert stages.current_outputs == Outputs(expected=["df_clean"])
    assert snap.location.progress.steps == LevelProgress()
    assert snap.location.progress.behaviors == LevelProgress()
    assert snap.location.current == CurrentLocation(stage_id="data_cleaning")
    assert snap.metrics.overall_progress == 0.25

    assert [h.event for h in snap.fsm.history] == run.fired
    assert run.fired == [
        E.START_WORKFLOW,
        E.START_STEP,
        E.START_BEHAVIOR,
        E.START_ACTION,
        *[E.COMPLETE_ACTION, E.NEXT_ACTION] * 3,
        E.COMPLETE_ACTION,
        E.COMPLETE_BEHAVIOR,
        E.NEXT_BEHAVIOR,
        E.START_ACTION,
        *[E.COMPLETE_ACTION, E.NEXT_ACTION] * 2,
        E.COMPLETE_ACTION,
        E.COMPLETE_BEHAVIOR,
        E.COMPLETE_STEP,
        E.NEXT_STEP,
        E.START_BEHAVIOR,
        E.START_ACTION,
        *[E.COMPLETE_ACTION, E.NEXT_ACTION] * 2,
        E.COMPLETE_ACTION,
        E.COMPLETE_BEHAVIOR,
        E.COMPLETE_STEP,
        E.COMPLETE_STAGE,
        E.NEXT_STAGE,
    ]
    for before, after in zip(snap.fsm.history, snap.fsm.history[1:], strict=False):
        assert before.to is after.from_state


def test_chain_helper_reaches_the_next_stage() -> None:
    run = chain_until()
    assert run.snapshot.fsm.state is State.STAGE_RUNNING
    assert run.snapshot.location.current.stage_id == "data_cleaning"


def test_the_chain_never_mutates_its_inputs() -> None:
    run = Run()
    for name in CHAIN[:5]:
        before = run.snapshot.model_dump(mode="json")
        kept = run.snapshot
        run.apply(name)
        assert kept.model_dump(mode="json") == before
        if name in EXECUTION_OUTPUTS:
            run.execute(EXECUTION_OUTPUTS[name])
