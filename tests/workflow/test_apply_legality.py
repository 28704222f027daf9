"""Every payload kind in every FSM state: legal -> table-legal events, illegal -> typed error.

The reference client picks a transition from a response's shape alone; here a payload in a
state where it means nothing raises :class:`IllegalPayloadError` and changes nothing.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.fsm.workflow import next_state
from notebook_bcc.models.names import State
from notebook_bcc.models.records import HistoryEntry, TraceRecord
from notebook_bcc.models.snapshot import WorkflowSnapshot
from notebook_bcc.protocol import Payload, parse_payload
from notebook_bcc.workflow import (
    LEGAL_STATES,
    ApplyError,
    IllegalPayloadError,
    apply_payload,
    legal_states,
    navigate,
)
from notebook_bcc.workflow.legal import PLANNING_DECISION_STATES
from tests.conftest import FIXTURES
from tests.workflow.test_apply_chain import CHAIN, Run, at_state, fixture_bytes, snapshot_before

PLANNING_DECISION = '{"targetAchieved": true, "transition": {"continue_behaviors": false}}'

SAMPLES: dict[str, bytes] = {
    "stages": fixture_bytes("00_stages.txt"),
    "workflow": (FIXTURES / "protocol" / "workflow.xml").read_bytes(),
    "steps": fixture_bytes("01_steps_loading.xml"),
    "behavior": fixture_bytes("02_behavior_load_b1.xml"),
    "actions": fixture_bytes("03_actions_load_b1.xml"),
    "json-actions": fixture_bytes("06_actions_load_b2.ndjson"),
    "reflection": fixture_bytes("04_reflection_load_continue.xml"),
    "stage_reflection": fixture_bytes("08_stage_reflection_next_step.xml"),
    "signals": fixture_bytes("11_signals_inventory.ndjson"),
    "planning": PLANNING_DECISION.encode(),
}
"""One realistic payload of each kind."""

PAYLOADS: dict[str, Payload] = {kind: parse_payload(data) for kind, data in SAMPLES.items()}

EXPECTED_LEGAL = {
    "stages": ["idle", "error"],
    "workflow": [
        "idle",
        "stage_running",
        "step_running",
        "behavior_running",
        "action_running",
        "action_completed",
        "behavior_completed",
        "step_completed",
        "stage_completed",
        "error",
    ],
    "steps": ["stage_running"],
    "behavior": ["step_running", "behavior_running"],
    "actions": ["behavior_running", "action_completed"],
    "json-actions": ["behavior_running", "action_completed"],
    "reflection": ["behavior_completed"],
    "stage_reflection": ["step_completed"],
    "signals": ["behavior_completed", "step_completed", "stage_completed"],
    "planning": [
        "idle",
        "stage_running",
        "step_running",
        "behavior_running",
        "action_completed",
        "behavior_completed",
        "step_completed",
        "stage_completed",
        "error",
    ],
    "navigate": ["action_completed", "step_completed", "stage_completed"],
    "complete_action": ["action_running"],
}


def test_the_legal_state_table_is_documented() -> None:
    for kind, states in EXPECTED_LEGAL.items():
        assert legal_states(kind) == states, kind
    assert set(LEGAL_STATES) == set(EXPECTED_LEGAL)


LEGAL_FOR_SAMPLE = {**LEGAL_STATES, "planning": PLANNING_DECISION_STATES}
"""A planning *decision* is legal in fewer states than planning payloads in general."""

ILLEGAL = [
    (kind, state) for kind in SAMPLES for state in State if state not in LEGAL_FOR_SAMPLE[kind]
]


@pytest.mark.parametrize(("kind", "state"), ILLEGAL, ids=[f"{k}@{s.value}" for k, s in ILLEGAL])
def test_payload_in_an_illegal_state_is_a_typed_error_and_changes_nothing(
    kind: str, state: State
) -> None:
    snapshot = at_state(snapshot_before("04_reflection_load_continue.xml"), state)
    before = snapshot.model_dump(mode="json")
    with pytest.raises(IllegalPayloadError) as caught:
        apply_payload(snapshot, PAYLOADS[kind], at="2025-01-01T00:00:00Z")
    error = caught.value
    assert error.kind == kind
    assert error.state == state.value
    assert error.allowed == [s.value for s in State if s in LEGAL_FOR_SAMPLE[kind]]
    assert error.code == "illegal_payload"
    assert f"{kind} payload in state {state.value}: not legal in this state" in error.message
    assert snapshot.model_dump(mode="json") == before


def test_a_reflection_in_step_running_is_refused_not_a_jump() -> None:
    snapshot = snapshot_before("02_behavior_load_b1.xml")
    assert snapshot.fsm.state is State.STEP_RUNNING
    with pytest.raises(IllegalPayloadError, match="accepted in: behavior_completed"):
        apply_payload(snapshot, PAYLOADS["reflection"])


@pytest.mark.parametrize("state", [s for s in State if s not in LEGAL_STATES["navigate"]])
def test_navigate_outside_client_states_is_refused(state: State) -> None:
    snapshot = at_state(snapshot_before(None), state)
    with pytest.raises(IllegalPayloadError):
        navigate(snapshot)


def _chain_snapshots() -> list[WorkflowSnapshot]:
    run = Run()
    found = [run.snapshot]
    for name in CHAIN:
        run.apply(name)
        found.append(run.snapshot)
        if run.snapshot.fsm.state is State.ACTION_RUNNING:
            run.execute([])
            found.append(run.snapshot)
    return found


CHAIN_SNAPSHOTS = _chain_snapshots()


@given(
    index=st.integers(min_value=0, max_value=len(CHAIN_SNAPSHOTS) - 1),
    state=st.one_of(st.none(), st.sampled_from(list(State))),
    kind=st.sampled_from(sorted(SAMPLES)),
    max_iterations=st.integers(min_value=1, max_value=4),
)
def test_any_payload_in_any_state_is_a_legal_move_or_a_typed_error(
    index: int, state: State | None, kind: str, max_iterations: int
) -> None:
    snapshot = CHAIN_SNAPSHOTS[index]
    if state is not None:
        snapshot = at_state(snapshot, state)
    before = snapshot.model_dump(mode="json")
    applied = None
    error: ApplyError | None = None
    try:
        applied = apply_payload(
            snapshot, PAYLOADS[kind], at="2025-01-01T00:00:00Z", max_iterations=max_iterations
        )
    except ApplyError as exc:
        error = exc
    assert snapshot.model_dump(mode="json") == before
    if applied is None:
        assert error is not None
        assert error.kind == kind
        assert error.state == snapshot.fsm.state.value
        return
    assert snapshot.fsm.state in LEGAL_FOR_SAMPLE[kind]
    current = snapshot.fsm.state
    for event in applied.events:
        current = next_state(current, event)
    assert applied.snapshot.fsm.state is current
    rows = [row for row in applied.records if isinstance(row, HistoryEntry)]
    assert len(rows) == len(applied.events)
    history = applied.snapshot.fsm.history
    assert history[len(history) - len(applied.events) :] == rows
    repairs = [row for row in applied.records if isinstance(row, TraceRecord)]
    assert [row.metadata["repairs"] for row in repairs] == (
        [applied.repairs] if applied.repairs else []
    )


def test_every_sample_in_every_state_of_every_chain_point() -> None:
    """Exhaustive companion of the property test: no crash, only legal moves or typed errors."""
    outcomes = {"ok": 0, "illegal": 0, "contradictory": 0}
    for snapshot in CHAIN_SNAPSHOTS:
        for state in [None, *State]:
            probe = snapshot if state is None else at_state(snapshot, state)
            for kind, payload in PAYLOADS.items():
                try:
                    applied = apply_payload(probe, payload, at="2025-01-01T00:00:00Z")
                except IllegalPayloadError:
                    outcomes["illegal"] += 1
                    continue
                except ApplyError:
                    outcomes["contradictory"] += 1
                    continue
                outcomes["ok"] += 1
                current = probe.fsm.state
                for event in applied.events:
                    current = next_state(current, event)
                assert applied.snapshot.fsm.state is current, kind
    assert all(count > 0 for count in outcomes.values()), outcomes
