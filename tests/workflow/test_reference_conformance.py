"""Conformance with the reference client's state documents (issue 21).

``tests/fixtures/protocol/reference/`` holds a DSLC state chain written from the seeds'
schemas (seed 000 "State Variables Schema" and its worked example, seed 003's FSM block):
IDLE -> STAGE_RUNNING -> STEP_RUNNING -> BEHAVIOR_RUNNING -> BEHAVIOR_COMPLETED ->
STEP_COMPLETED, with the planner payloads that lead from one to the next. Every document is
imported and observed, and every payload applied to the imported state before it; the
observation must show each field the document holds, field by field: descriptions at every
level, remaining items with their specs, completed behaviors with what they were asked and how
they ended, variables as ``name: value``, effects, notebook cells and ``last_output`` as an
object, FSM state, last transition (as the reference spelled it) and timestamp.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from notebook_bcc.models.names import Event, State
from notebook_bcc.workflow import (
    Observation,
    apply_text,
    build_observation,
    load_state_document,
)
from tests.conftest import FIXTURES

REFERENCE = FIXTURES / "protocol" / "reference"
CHAIN = (
    "00_idle",
    "01_stage_running",
    "02_step_running",
    "03_behavior_running",
    "04_behavior_completed",
    "05_step_completed",
)
LEVELS = ("stages", "steps", "behaviors")
AT = "2025-10-30T10:10:00Z"


def document(name: str) -> dict[str, Any]:
    """A reference state document of the chain."""
    data: dict[str, Any] = json.loads((REFERENCE / f"{name}.json").read_text(encoding="utf-8"))
    return data


def payload(name: str) -> bytes:
    """A planner payload of the chain."""
    return (REFERENCE / name).read_bytes()


def doc_location(doc: dict[str, Any]) -> dict[str, Any]:
    """``location`` with ``progress`` inside it (the reference writes it either way)."""
    location = dict(doc["observation"]["location"])
    if "progress" not in location:
        location["progress"] = doc["observation"]["progress"]
    return location


def assert_item(seen: dict[str, Any] | None, expected: dict[str, Any] | None, where: str) -> None:
    """Every field of the reference item is in the observed one, with the same value."""
    if expected is None:
        assert seen is None, where
        return
    assert seen is not None, where
    missing = [key for key in expected if key not in seen]
    assert missing == [], f"{where}: fields lost: {missing}"
    for key, value in expected.items():
        assert seen[key] == value, f"{where}/{key}"


def assert_level(seen: dict[str, Any], expected: dict[str, Any], where: str) -> None:
    """One level of progress, item by item and field by field."""
    assert_item(seen["current"], expected["current"], f"{where}/current")
    for key in ("completed", "remaining"):
        if key not in expected:
            continue
        assert len(seen[key]) == len(expected[key]), f"{where}/{key}"
        for index, (item, reference) in enumerate(zip(seen[key], expected[key], strict=True)):
            assert_item(item, reference, f"{where}/{key}/{index}")
    assert seen.get("focus") == expected["focus"], f"{where}/focus"
    assert seen["current_outputs"] == expected["current_outputs"], f"{where}/current_outputs"
    if "iteration" in expected:
        assert seen.get("iteration") == expected["iteration"], f"{where}/iteration"


def assert_location(observed: dict[str, Any], doc: dict[str, Any]) -> None:
    """``observation.location``: current, goals and the three levels of progress."""
    seen = observed["observation"]["location"]
    expected = doc_location(doc)
    assert seen["current"] == expected["current"]
    assert seen["goals"] == expected["goals"]
    for level in LEVELS:
        assert_level(seen["progress"][level], expected["progress"][level], level)


def expected_cell(cell: dict[str, Any]) -> dict[str, Any]:
    """A reference cell as the observation shows it: outputs as their text."""
    view: dict[str, Any] = {"cell_type": cell["cell_type"], "source": cell["source"]}
    if cell.get("outputs"):
        view["outputs"] = [output["text"] for output in cell["outputs"]]
    if "execution_count" in cell:
        view["execution_count"] = cell["execution_count"]
    return view


def assert_state(observed: dict[str, Any], doc: dict[str, Any]) -> None:
    """The state block: variables, effects, notebook (cells too), FSM."""
    seen = observed["state"]
    expected = doc["state"]
    assert seen["variables"] == expected["variables"]
    assert seen["effects"] == expected["effects"]
    notebook = expected["notebook"]
    for key in ("notebook_id", "title", "cell_count", "execution_count", "last_cell_type"):
        assert seen["notebook"][key] == notebook[key], f"notebook/{key}"
    assert seen["notebook"]["last_output"] == notebook["last_output"]
    assert seen["notebook"].get("cells", []) == [expected_cell(c) for c in notebook["cells"]]
    fsm = expected["FSM"]
    assert seen["FSM"]["state"] == fsm["state"]
    assert seen["FSM"]["last_transition"] == fsm["last_transition"]
    assert seen["FSM"]["timestamp"] == fsm["timestamp"]


@pytest.mark.parametrize("name", CHAIN)
def test_import_then_observe_keeps_every_field(name: str) -> None:
    doc = document(name)
    observed = build_observation(load_state_document(doc))
    Observation.model_validate(observed)
    assert_location(observed, doc)
    assert_state(observed, doc)


def test_the_step_completed_document_keeps_its_spellings_and_history() -> None:
    snapshot = load_state_document(document("05_step_completed"))
    assert snapshot.fsm.state is State.STEP_COMPLETED
    assert snapshot.fsm.last_transition is Event.COMPLETE_STEP
    assert snapshot.fsm.last_transition_name == "TRANSITION_TO_COMPELETE_STEP"
    (entry,) = snapshot.fsm.history
    assert (entry.from_state, entry.event, entry.to) == (
        State.BEHAVIOR_COMPLETED,
        Event.COMPLETE_STEP,
        State.STEP_COMPLETED,
    )
    assert entry.timestamp == "2025-10-30T10:05:00Z"
    history = build_observation(snapshot, fmt="context")["observation"]["context"]["FSM"]
    assert history["history"][0]["timestamp"] == "2025-10-30T10:05:00Z"


def test_the_notebook_survives_a_round_trip_through_the_snapshot() -> None:
    snapshot = load_state_document(document("04_behavior_completed"))
    again = load_state_document(snapshot.model_dump(mode="json", by_alias=True))
    assert again == snapshot
    assert (
        again.notebook.last_output
        == document("04_behavior_completed")["state"]["notebook"]["last_output"]
    )
    assert len(again.notebook.cells) == 2


@pytest.mark.parametrize(
    ("before", "payload_name", "after", "events", "levels"),
    [
        ("00_idle", "stages.xml", "01_stage_running", [Event.START_WORKFLOW], ("stages",)),
        ("01_stage_running", "steps.xml", "02_step_running", [Event.START_STEP], LEVELS),
        (
            "02_step_running",
            "behavior.xml",
            "03_behavior_running",
            [Event.START_BEHAVIOR],
            LEVELS,
        ),
        (
            "04_behavior_completed",
            "reflection.xml",
            "05_step_completed",
            [Event.COMPLETE_STEP],
            LEVELS,
        ),
    ],
)
def test_apply_on_an_imported_state_gives_the_next_reference_state(
    before: str, payload_name: str, after: str, events: list[Event], levels: tuple[str, ...]
) -> None:
    snapshot = load_state_document(document(before))
    applied = apply_text(snapshot, payload(payload_name), at=AT)
    assert applied.events == events
    assert applied.repairs == []
    observed = build_observation(applied.snapshot)
    Observation.model_validate(observed)
    expected = document(after)
    location = observed["observation"]["location"]
    reference = doc_location(expected)
    assert location["current"] == reference["current"]
    assert location["goals"] == reference["goals"]
    for level in levels:
        assert_level(location["progress"][level], reference["progress"][level], level)
    state = observed["state"]
    assert state["FSM"]["state"] == expected["state"]["FSM"]["state"]
    assert state["variables"] == expected["state"]["variables"]
    assert state["effects"] == expected["state"]["effects"]


def test_the_stage_plan_keeps_the_workflow_goals_beside_the_stage_goal() -> None:
    applied = apply_text(load_state_document(document("00_idle")), payload("stages.xml"), at=AT)
    location = build_observation(applied.snapshot)["observation"]["location"]
    assert location["workflow_goals"] == (
        "A reproducible house price model with test RMSE below 25000."
    )
    assert location["goals"] == doc_location(document("01_stage_running"))["goals"]
