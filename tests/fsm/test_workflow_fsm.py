"""The workflow FSM against seed 003's table: every row, every missing pair, purity."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from notebook_bcc.errors import IllegalTransitionError, UnknownNameError
from notebook_bcc.fsm.table import ALLOWED_EVENTS, TRANSITIONS, table_rows
from notebook_bcc.fsm.workflow import can_fire, next_state, transition
from notebook_bcc.models import (
    Event,
    State,
    WorkflowSnapshot,
    new_snapshot,
    parse_event,
    parse_state,
)
from notebook_bcc.models.snapshot import HISTORY_TAIL
from tests.conftest import FIXTURES


def _seed_rows() -> dict[str, list[tuple[str, str, str]]]:
    """The seed's four tables, read from the fixture transcribed from seed 003."""
    groups: dict[str, list[tuple[str, str, str]]] = {}
    current = ""
    text = (FIXTURES / "fsm" / "seed003_table.txt").read_text(encoding="utf-8")
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        if line.startswith("["):
            current = line.strip("[]")
            groups[current] = []
            continue
        source, event, target = (part.strip() for part in line.split("|"))
        groups[current].append((source, event, target))
    return groups


SEED = _seed_rows()
SEED_ROWS = [row for rows in SEED.values() for row in rows]
BEYOND_SEED_ROWS = [("idle", "CANCEL", "cancelled")]
"""Rows the table adds to seed 003 (``notebook_bcc.fsm.table.BEYOND_SEED``, each with why)."""
TABLE_ROWS = SEED_ROWS + BEYOND_SEED_ROWS
TABLE_PAIRS = {(s, e) for s, e, _ in TABLE_ROWS}
MISSING = [
    (s.value, e.value)
    for s, e in itertools.product(State, Event)
    if (s.value, e.value) not in TABLE_PAIRS
]


def test_seed_fixture_has_the_counts_the_issue_names() -> None:
    assert {k: len(v) for k, v in SEED.items()} == {
        "core": 17,
        "update": 7,
        "error_cancel": 17,
        "recovery": 4,
    }
    assert len(State) == 14
    assert len(Event) == 22
    assert len(MISSING) == 263 - len(BEYOND_SEED_ROWS)


def test_table_equals_the_seed_exactly_plus_the_rows_beyond_it() -> None:
    ours = {(r.source.value, r.event.value, r.target.value) for r in TRANSITIONS}
    assert ours == set(TABLE_ROWS)
    assert len(TRANSITIONS) == 45 + len(BEYOND_SEED_ROWS)
    beyond = [(r.source.value, r.event.value, r.target.value) for r in TRANSITIONS]
    assert beyond[-len(BEYOND_SEED_ROWS) :] == BEYOND_SEED_ROWS, "after the seed's rows"
    for group, rows in SEED.items():
        assert [
            (r.source.value, r.event.value, r.target.value) for r in TRANSITIONS if r.group == group
        ] == rows


@pytest.mark.parametrize(("source", "event", "target"), TABLE_ROWS)
def test_every_seed_row_fires(source: str, event: str, target: str) -> None:
    snap = new_snapshot("wf", "run-1").model_copy(
        update={"fsm": new_snapshot("wf", "run-1").fsm.model_copy(update={"state": State(source)})}
    )
    after, records = transition(snap, event, actor="tester", at="2026-01-01T00:00:00Z")
    assert after.fsm.state.value == target
    assert after.fsm.last_transition is not None
    assert after.fsm.last_transition.value == event
    assert after.fsm.timestamp == "2026-01-01T00:00:00Z"
    assert len(records) == 1
    row = records[0].model_dump(by_alias=True, mode="json")
    assert row == {
        "from": source,
        "event": event,
        "to": target,
        "timestamp": "2026-01-01T00:00:00Z",
        "actor": "tester",
    }
    assert after.fsm.history[-1] == records[0]
    # the input is untouched
    assert snap.fsm.state.value == source
    assert snap.fsm.history == []


@pytest.mark.parametrize(("source", "event"), MISSING)
def test_every_missing_pair_is_refused_and_changes_nothing(source: str, event: str) -> None:
    base = new_snapshot("wf", "run-1")
    snap = base.model_copy(update={"fsm": base.fsm.model_copy(update={"state": State(source)})})
    before = snap.model_dump_json()
    with pytest.raises(IllegalTransitionError) as info:
        transition(snap, event)
    assert info.value.state == source
    assert info.value.event == event
    assert source in info.value.message
    assert event in info.value.message
    assert snap.model_dump_json() == before
    assert not can_fire(source, event)


@pytest.mark.parametrize(
    ("spelling", "expected"),
    [
        ("STEP_RUNNING", State.STEP_RUNNING),
        ("step_running", State.STEP_RUNNING),
        ("Step_Running", State.STEP_RUNNING),
        ("STATE_STEP_RUNNING", State.STEP_RUNNING),
        ("state_behavior_completed", State.BEHAVIOR_COMPLETED),
        ("BEHAVIOR_COMPLETE", State.BEHAVIOR_COMPLETED),
        ("STATE_WORKFLOW_COMPLETE", State.WORKFLOW_COMPLETED),
        (" idle ", State.IDLE),
        ("step-update-pending", State.STEP_UPDATE_PENDING),
    ],
)
def test_state_spellings_on_input(spelling: str, expected: State) -> None:
    assert parse_state(spelling) is expected
    assert str(parse_state(spelling)) == expected.value


@pytest.mark.parametrize("spelling", ["start_step", "Start_Step", "START-STEP", "start step"])
def test_event_spellings_on_input(spelling: str) -> None:
    assert parse_event(spelling) is Event.START_STEP
    assert next_state("stage_running", spelling) is State.STEP_RUNNING


@pytest.mark.parametrize("bad", ["", "running", "STATE_", "stage", 3, None, "idle_completed"])
def test_unknown_state_is_a_typed_error(bad: object) -> None:
    with pytest.raises(UnknownNameError) as info:
        next_state(bad, "RESET")  # type: ignore[arg-type]
    assert "unknown state" in info.value.message
    assert "idle" in info.value.message


@pytest.mark.parametrize("bad", ["", "GO", "COMPLETE", 7, "START_WORKFLOWS"])
def test_unknown_event_is_a_typed_error(bad: object) -> None:
    with pytest.raises(UnknownNameError) as info:
        next_state("idle", bad)  # type: ignore[arg-type]
    assert "unknown event" in info.value.message


def test_output_spelling_is_canonical() -> None:
    rows = table_rows()
    assert all(r["from"] == r["from"].lower() and r["to"] == r["to"].lower() for r in rows)
    assert all(r["event"] == r["event"].upper() for r in rows)


def test_history_tail_is_bounded() -> None:
    snap = new_snapshot("wf", "r")
    events = ["START_WORKFLOW", "START_STEP", "START_BEHAVIOR", "START_ACTION"]
    snap = _fire_all(snap, events)
    for _ in range(200):
        snap = _fire_all(snap, ["COMPLETE_ACTION", "NEXT_ACTION"])
    assert len(snap.fsm.history) == HISTORY_TAIL
    assert snap.fsm.history[-1].event is Event.NEXT_ACTION
    assert snap.fsm.history[-2].event is Event.COMPLETE_ACTION


def _fire_all(snap: WorkflowSnapshot, events: list[str]) -> WorkflowSnapshot:
    for event in events:
        snap, _ = transition(snap, event)
    return snap


def test_scenario_one_happy_path() -> None:
    snap = _fire_all(
        new_snapshot("wf", "r"),
        [
            "START_WORKFLOW",
            "START_STEP",
            "START_BEHAVIOR",
            "START_ACTION",
            "COMPLETE_ACTION",
            "NEXT_ACTION",
            "COMPLETE_ACTION",
            "COMPLETE_BEHAVIOR",
            "NEXT_BEHAVIOR",
            "START_ACTION",
            "COMPLETE_ACTION",
            "COMPLETE_BEHAVIOR",
            "COMPLETE_STEP",
            "NEXT_STEP",
            "COMPLETE_STEP",
            "COMPLETE_STAGE",
            "NEXT_STAGE",
            "COMPLETE_STAGE",
            "COMPLETE_WORKFLOW",
        ],
    )
    assert snap.fsm.state is State.WORKFLOW_COMPLETED
    path = [(h.from_state, h.to) for h in snap.fsm.history]
    assert all(a[1] == b[0] for a, b in itertools.pairwise(path))


@given(st.lists(st.sampled_from(list(Event)), max_size=60))
def test_random_event_sequences_keep_a_legal_path(events: list[Event]) -> None:
    snap = new_snapshot("wf", "r")
    legal_path = [State.IDLE]
    for event in events:
        before = snap
        try:
            snap, records = transition(snap, event)
        except IllegalTransitionError:
            assert snap is before
            assert event not in ALLOWED_EVENTS[snap.fsm.state]
            continue
        legal_path.append(snap.fsm.state)
        assert records[0].from_state is legal_path[-2]
    assert snap.fsm.state is legal_path[-1]
    tail = snap.fsm.history
    for prev, nxt in itertools.pairwise(tail):
        assert prev.to is nxt.from_state
    for entry in tail:
        assert next_state(entry.from_state, entry.event) is entry.to


class WorkflowMachine(RuleBasedStateMachine):
    """Random command sequences against the FSM: state valid, refusals inert, history legal."""

    def __init__(self) -> None:
        super().__init__()
        self.snapshot = new_snapshot("wf", "run")
        self.model_state = State.IDLE
        self.full_history: list[tuple[State, Event, State]] = []

    @rule(event=st.sampled_from(list(Event)))
    def fire(self, event: Event) -> None:
        expected = {
            (s, e): t for s, e, t in ((State(a), Event(b), State(c)) for a, b, c in TABLE_ROWS)
        }
        key = (self.model_state, event)
        dump = self.snapshot.model_dump_json()
        if key in expected:
            self.snapshot, records = transition(self.snapshot, event)
            self.full_history.append((self.model_state, event, expected[key]))
            self.model_state = expected[key]
            assert records[0].to is self.model_state
        else:
            with pytest.raises(IllegalTransitionError):
                transition(self.snapshot, event)
            assert self.snapshot.model_dump_json() == dump

    @invariant()
    def state_matches_the_seed_model(self) -> None:
        assert self.snapshot.fsm.state is self.model_state
        assert isinstance(self.snapshot.fsm.state, State)

    @invariant()
    def history_tail_is_the_suffix_of_the_legal_path(self) -> None:
        tail = [(h.from_state, h.event, h.to) for h in self.snapshot.fsm.history]
        assert len(tail) <= HISTORY_TAIL
        assert tail == self.full_history[-len(tail) :] if tail else self.full_history == []

    @invariant()
    def snapshot_round_trips(self) -> None:
        again = WorkflowSnapshot.model_validate_json(self.snapshot.model_dump_json(by_alias=True))
        assert again == self.snapshot


TestWorkflowMachine = WorkflowMachine.TestCase


def test_snapshot_json_schema_names_every_d5_field() -> None:
    props = WorkflowSnapshot.model_json_schema(by_alias=True)["properties"]
    for field in [
        "workflow_id",
        "run_id",
        "notebook_path",
        "schema_version",
        "version",
        "fsm",
        "run",
        "location",
        "variables",
        "effects",
        "notebook",
        "open_contracts",
        "action_queue",
        "acceptance",
        "gaps",
        "stage_machine",
        "metrics",
        "usage",
        "planner",
    ]:
        assert field in props, field


def test_snapshot_refuses_unknown_keys_and_bad_states() -> None:
    good = new_snapshot("wf", "r").model_dump(mode="json", by_alias=True)
    with pytest.raises(ValueError, match="extra"):
        WorkflowSnapshot.model_validate({**good, "surprise": 1})
    bad = {**good, "fsm": {**good["fsm"], "state": "flying"}}
    with pytest.raises(ValueError, match=r"fsm\.state"):
        WorkflowSnapshot.model_validate(bad)


def test_fixture_path_exists() -> None:
    assert Path(FIXTURES / "fsm" / "seed003_table.txt").is_file()
