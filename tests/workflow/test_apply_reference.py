"""Reference-client state documents converted to snapshots, and replayed through apply."""

from __future__ import annotations

import json

import pytest

from notebook_bcc.models.names import Event, State
from notebook_bcc.models.snapshot import CurrentLocation, VariableInfo
from notebook_bcc.workflow import (
    StateDocumentError,
    apply_text,
    build_observation,
    load_state_document,
)
from tests.workflow.test_apply_chain import fixture_bytes, snapshot_before

AT = "2025-05-05T05:05:05Z"

IDLE = {
    "observation": {"location": {"current": {"stage_id": None, "step_id": None}}},
    "state": {
        "variables": {
            "user_problem": "Build house price model, RMSE < 25000, R² > 0.85",
            "user_submit_files": ["./assets/housing.csv"],
        },
        "FSM": {"state": "IDLE"},
    },
}
"""Seed 000's initial state, as the reference client records it."""

STAGE_RUNNING = {
    "observation": {
        "location": {"current": {"stage_id": "data_loading", "step_id": None}},
        "progress": {
            "stages": {
                "completed": [],
                "current": {
                    "stage_id": "data_loading",
                    "title": "Data Loading",
                    "goal": "Load the CSV",
                    "verified_artifacts": ["df_raw", {"name": "data_inventory"}],
                    "required_variables": "user_submit_files",
                    "priority": "high",
                },
                "remaining": [{"stage_id": "data_cleaning", "title": "Cleaning"}],
                "focus": "RMSE < 25000",
                "current_outputs": {"expected": ["df_raw"], "produced": [], "in_progress": []},
            }
        },
    },
    "state": {
        "variables": {"user_submit_files": ["./assets/housing.csv"], "threshold": 0.3},
        "effects": {"current": ["loaded", {"rows": 2930}], "history": []},
        "notebook": {"title": "Housing", "cells": [{}, {}], "last_cell_type": "markdown"},
        "FSM": {
            "state": "STAGE_RUNNING",
            "last_transition": "START_WORKFLOW -> stage_running",
            "timestamp": "2025-10-30T10:23:45Z",
            "history": [
                {
                    "from": "IDLE",
                    "event": "start_workflow",
                    "to": "STATE_STAGE_RUNNING",
                    "timestamp": "2025-10-30T10:23:45Z",
                }
            ],
        },
    },
}
"""Seed 000's "After START_WORKFLOW" example, fleshed out (progress beside location)."""


def test_the_idle_example_converts() -> None:
    snapshot = load_state_document(IDLE)
    assert (snapshot.workflow_id, snapshot.run_id) == ("imported", "imported")
    assert snapshot.fsm.state is State.IDLE
    assert snapshot.problem == "Build house price model, RMSE < 25000, R² > 0.85"
    assert snapshot.files == ["./assets/housing.csv"]
    assert snapshot.variables == {}
    applied = apply_text(snapshot, fixture_bytes("00_stages.txt"), at=AT)
    assert applied.events == [Event.START_WORKFLOW]
    assert applied.warnings == []
    assert len(applied.repairs) == 9


def test_a_stage_running_state_converts_and_replays() -> None:
    snapshot = load_state_document(STAGE_RUNNING)
    assert snapshot.fsm.state is State.STAGE_RUNNING
    assert snapshot.fsm.last_transition is Event.START_WORKFLOW
    assert snapshot.fsm.timestamp == "2025-10-30T10:23:45Z"
    assert [(h.from_state, h.event, h.to) for h in snapshot.fsm.history] == [
        (State.IDLE, Event.START_WORKFLOW, State.STAGE_RUNNING)
    ]
    stages = snapshot.location.progress.stages
    assert stages.current is not None
    assert stages.current.id == "data_loading"
    assert stages.current.verified_artifacts == {"df_raw": "", "data_inventory": ""}
    assert stages.current.required_variables == {"user_submit_files": ""}
    assert stages.current.extra == {"priority": "high"}
    assert [s.id for s in stages.remaining] == ["data_cleaning"]
    assert stages.focus == "RMSE < 25000"
    assert snapshot.location.current == CurrentLocation(stage_id="data_loading")
    assert snapshot.variables == {"threshold": VariableInfo(type="float", value=0.3)}
    assert snapshot.effects.current == ["loaded", '{"rows": 2930}']
    assert snapshot.notebook.cell_count == 2
    assert snapshot.notebook.cells == [{}, {}]
    assert snapshot.notebook.title == "Housing"
    applied = apply_text(snapshot, fixture_bytes("01_steps_loading.xml"), at=AT)
    assert applied.events == [Event.START_STEP]
    assert applied.snapshot.location.current.step_id == "load_csv"


def test_the_context_form_and_typo_transitions_convert() -> None:
    document = {
        "observation": {
            "location": {
                "current": {
                    "stage_id": "s",
                    "step_id": "t",
                    "behavior_id": "b",
                    "behavior_iteration": 1,
                },
                "progress": {
                    "behaviors": {
                        "completed": [
                            {
                                "behavior_id": "b",
                                "completion_status": "completed",
                                "artifacts_produced": ["df"],
                            }
                        ],
                        "iteration": 1,
                    }
                },
                "goals": ["RMSE < 25000", "R² > 0.85"],
            },
            "context": {
                "variables": {},
                "FSM": {
                    "state": "step_complete",
                    "last_transition": "TRANSITION_TO_COMPELETE_STEP",
                },
            },
        }
    }
    snapshot = load_state_document(document)
    assert snapshot.fsm.state is State.STEP_COMPLETED
    assert snapshot.fsm.last_transition is Event.COMPLETE_STEP
    assert snapshot.location.goals == "RMSE < 25000\nR² > 0.85"
    behaviors = snapshot.location.progress.behaviors
    assert behaviors.completed[0].completion_status == "success"
    assert behaviors.iteration == 1


def test_our_snapshot_loads_as_itself() -> None:
    snapshot = snapshot_before("04_reflection_load_continue.xml")
    document = json.loads(snapshot.model_dump_json(by_alias=True))
    assert load_state_document(document) == snapshot


def test_a_converted_state_observes_like_the_reference() -> None:
    observation = build_observation(load_state_document(STAGE_RUNNING))
    assert observation["state"]["FSM"]["state"] == "STAGE_RUNNING"
    assert observation["state"]["variables"]["user_submit_files"] == ["./assets/housing.csv"]
    current = observation["observation"]["location"]["progress"]["stages"]["current"]
    assert current["stage_id"] == "data_loading"


@pytest.mark.parametrize(
    ("spelling", "event"),
    [
        ("JUMP", None),
        ("TRANSITION_TO_STEP_COMPLETED", None),
        ("TRANSITION_TO_COMPLETE_STEP", Event.COMPLETE_STEP),
        ("START_STEP -> step_running", Event.START_STEP),
    ],
)
def test_last_transition_is_informational_and_never_refused(
    spelling: str, event: Event | None
) -> None:
    document = {"state": {"FSM": {"state": "step_completed", "last_transition": spelling}}}
    snapshot = load_state_document(document)
    assert snapshot.fsm.state is State.STEP_COMPLETED
    assert snapshot.fsm.last_transition is event
    assert snapshot.fsm.last_transition_name == spelling


@pytest.mark.parametrize(
    ("document", "pointer", "message"),
    [
        ([], "/", "expected a JSON object"),
        ({"hello": 1}, "/", "neither a notebook-bcc snapshot"),
        ({"state": {"FSM": {"state": "FLYING"}}}, "/state/FSM/state", "unknown state 'FLYING'"),
        ({"state": {"variables": [1]}}, "/state/variables", "expected an object"),
        ({"state": {"effects": {"current": "x"}}}, "/state/effects/current", "expected an array"),
        (
            {"observation": {"progress": {"steps": {"current": {"title": "no id"}}}}},
            "/observation/progress/steps/current/step_id",
            "needs a string step_id",
        ),
        (
            {
                "observation": {
                    "location": {
                        "progress": {
                            "stages": {"completed": [{"id": "a", "completion_status": "meh"}]}
                        }
                    }
                }
            },
            "/observation/location/progress/stages/completed/0/completion_status",
            "unknown completion_status",
        ),
        (
            {"state": {"notebook": {"last_cell_type": "image"}}},
            "/state/notebook/last_cell_type",
            "expected code, markdown or raw",
        ),
        ({"workflow_id": "w", "run_id": "r", "fsm": {"state": "nope"}}, "/fsm/state", ""),
        ({"workflow_id": "w"}, "/run_id", "Field required"),
    ],
)
def test_malformed_documents_name_the_bad_field(
    document: object, pointer: str, message: str
) -> None:
    with pytest.raises(StateDocumentError) as caught:
        load_state_document(document)
    assert caught.value.pointer == pointer
    assert message in caught.value.message
    assert caught.value.code == "bad_state_document"
