"""Snapshot name maps: descriptions kept, and snapshots stored with bare-name lists still load."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from notebook_bcc.models.snapshot import Outputs, PlanItem, WorkflowSnapshot
from tests.conftest import FIXTURES

names = st.lists(st.text(min_size=1, max_size=12), max_size=6)


def test_a_snapshot_stored_with_bare_name_lists_loads() -> None:
    stored = json.loads((FIXTURES / "llm" / "snapshot.json").read_text(encoding="utf-8"))
    stage = stored["location"]["progress"]["stages"]["current"]
    assert isinstance(stage["verified_artifacts"], list)
    snapshot = WorkflowSnapshot.model_validate(stored)
    current = snapshot.location.progress.stages.current
    assert current is not None
    assert current.verified_artifacts == dict.fromkeys(stage["verified_artifacts"], "")
    assert current.required_variables == dict.fromkeys(stage["required_variables"], "")
    again = WorkflowSnapshot.model_validate(snapshot.model_dump(mode="json", by_alias=True))
    assert again == snapshot


def test_the_three_shapes_give_one_map() -> None:
    as_list = PlanItem(id="s", verified_artifacts=["df", "model"])
    as_items = PlanItem(
        id="s",
        verified_artifacts=[{"name": "df", "description": "frame"}, {"name": "model"}],
    )
    as_map = PlanItem(id="s", verified_artifacts={"df": "frame", "model": ""})
    assert as_list.verified_artifacts == {"df": "", "model": ""}
    assert as_items.verified_artifacts == as_map.verified_artifacts == {"df": "frame", "model": ""}
    assert Outputs().descriptions == {}


@given(names)
def test_a_list_of_names_loads_as_the_same_names_in_order(values: list[str]) -> None:
    item = PlanItem(id="s", required_variables=values)
    assert list(item.required_variables) == list(dict.fromkeys(values))
    assert set(item.required_variables.values()) <= {""}


@pytest.mark.parametrize("bad", [[1], [{"description": "no name"}], "df", 3])
def test_other_shapes_are_refused(bad: object) -> None:
    with pytest.raises(ValidationError):
        PlanItem(id="s", verified_artifacts=bad)
