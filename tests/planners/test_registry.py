"""The planner registry (one place planners are built) and the typed planner capabilities."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from notebook_bcc.blueprint.loader import load_blueprint_file
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.planners.base import Planner, PlannerError
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.planners.capabilities import (
    BlueprintBacked,
    DeclaresFiles,
    GapStrictPlanner,
    RecordedRun,
    StageItemMaker,
    StageMachinePlanner,
    fails_steps_on_gaps,
    problem_of,
)
from notebook_bcc.planners.http import HttpPlanner
from notebook_bcc.planners.http_settings import HttpPlannerSettings
from notebook_bcc.planners.llm import LlmPlanner
from notebook_bcc.planners.llm.errors import LlmSettingsError
from notebook_bcc.planners.llm.settings import LlmSettings
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.planners.registry import (
    REGISTRY,
    PlannerRegistry,
    UnknownPlannerError,
    default_registry,
)
from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transport_settings import TransportSettings
from tests.conftest import FIXTURES
from tests.planners.test_record_replay import record_some

PATHS = FIXTURES / "engine" / "paths.yaml"


def test_the_shipped_kinds_are_registered_in_the_rest_order() -> None:
    assert REGISTRY.kinds() == ("blueprint", "replay", "http", "llm")


def test_each_kind_is_built_from_its_settings(tmp_path: Path) -> None:
    http = REGISTRY.build("http", {"url": "http://127.0.0.1:9", "max_retries": 1, "junk": 3})
    assert isinstance(http, HttpPlanner)
    assert http.config.max_retries == 1
    llm = REGISTRY.build("llm", {"base_url": "http://127.0.0.1:9/v1", "model": "m"})
    assert isinstance(llm, LlmPlanner)
    assert llm.config.model == "m"
    blueprint = REGISTRY.build("blueprint", {"path": str(PATHS)})
    assert isinstance(blueprint, BlueprintPlanner)
    assert blueprint.path == PATHS
    loaded = load_blueprint_file(PATHS)
    given_loaded = REGISTRY.build("blueprint", {}, blueprint=loaded)
    assert isinstance(given_loaded, BlueprintPlanner)
    assert given_loaded.loaded is loaded
    record_some(tmp_path / "rec")
    replay = REGISTRY.build("replay", {"transcript": str(tmp_path / "rec")})
    assert isinstance(replay, ReplayPlanner)
    assert replay.directory == (tmp_path / "rec").resolve()


def test_bad_settings_raise_the_kinds_typed_error() -> None:
    with pytest.raises(PlannerError, match="not an http"):
        REGISTRY.build("http", {"url": "ftp://example.org"})
    with pytest.raises(LlmSettingsError, match="LLM idle_timeout must be positive"):
        REGISTRY.build("llm", {"base_url": "http://h/v1", "model": "m", "idle_timeout": 0})
    with pytest.raises(UnknownPlannerError, match="needs a blueprint path"):
        REGISTRY.build("blueprint", {})


def test_an_unknown_kind_names_the_available_ones() -> None:
    with pytest.raises(UnknownPlannerError) as caught:
        REGISTRY.build("oracle", {})
    assert caught.value.details == {
        "kind": "oracle",
        "available": ["blueprint", "replay", "http", "llm"],
    }
    assert "oracle" in caught.value.message


def test_from_stored_rebuilds_wraps_a_recording_and_refuses_what_it_cannot(tmp_path: Path) -> None:
    record_some(tmp_path / "rec")
    stored = REGISTRY.from_stored(
        {"kind": "blueprint", "settings": {"path": str(PATHS), "record": str(tmp_path / "rec")}}
    )
    assert isinstance(stored, RecordingPlanner)
    assert isinstance(stored.inner, BlueprintPlanner)
    for bad in (
        {"kind": "http", "settings": {}},
        {"kind": "llm", "settings": {"base_url": "http://h/v1"}},
        {"kind": "oracle", "settings": {"url": "x"}},
        {"kind": None},
        {"kind": "replay", "settings": "not a mapping"},
    ):
        with pytest.raises(NotebookBccError, match="cannot resume"):
            REGISTRY.from_stored(bad)


def test_a_registry_takes_new_kinds() -> None:
    made: list[dict[str, Any]] = []

    def build(settings: Any, loaded: Any) -> Planner:
        made.append(dict(settings))
        return REGISTRY.build("http", {"url": "http://127.0.0.1:9"})

    registry = PlannerRegistry()
    registry.register("mine", build, resume_keys=("token",))
    assert registry.kinds() == ("mine",)
    registry.from_stored({"kind": "mine", "settings": {"token": "t", "x": 1}})
    assert made == [{"token": "t", "x": 1}]
    assert default_registry().kinds() == REGISTRY.kinds()


def test_capabilities_are_typed_protocols_not_probes(tmp_path: Path) -> None:
    blueprint = BlueprintPlanner(load_blueprint_file(PATHS))
    http = HttpPlanner(HttpPlannerSettings(url="http://127.0.0.1:9"))
    record_some(tmp_path / "rec")
    replay = ReplayPlanner(tmp_path / "rec")
    recorded = RecordingPlanner(blueprint, tmp_path / "rec2")

    def caps(planner: object) -> set[str]:
        protocols = (
            StageMachinePlanner,
            BlueprintBacked,
            RecordedRun,
            GapStrictPlanner,
            StageItemMaker,
            DeclaresFiles,
        )
        return {p.__name__ for p in protocols if isinstance(planner, p)}

    every = {"StageMachinePlanner", "BlueprintBacked", "GapStrictPlanner", "StageItemMaker"}
    assert caps(blueprint) == every | {"DeclaresFiles"}
    assert caps(recorded) == caps(blueprint), "a recording forwards what it wraps"
    assert caps(replay) == {"RecordedRun", "GapStrictPlanner", "StageItemMaker", "DeclaresFiles"}
    assert caps(http) == set()
    assert fails_steps_on_gaps(blueprint) is True
    assert fails_steps_on_gaps(http) is False
    assert problem_of(blueprint) == blueprint.blueprint.name
    assert problem_of(replay) == replay.problem
    assert problem_of(http) is None


TRANSPORT = {f.name for f in fields(TransportSettings)}


def test_the_http_and_llm_settings_share_one_transport_block() -> None:
    http = {f.name for f in fields(HttpPlannerSettings)}
    llm = {f.name for f in fields(LlmSettings)}
    assert http & llm == TRANSPORT | {"stream"}, "only the transport block is shared"
    with pytest.raises(PlannerError, match="planner max_body_chars must be positive"):
        HttpPlannerSettings(url="http://h", max_body_chars=0)


@given(
    connect=st.floats(min_value=0.001, max_value=1e4),
    retries=st.integers(min_value=0, max_value=50),
    base=st.floats(min_value=0, max_value=100),
    body=st.integers(min_value=1, max_value=10**8),
)
def test_transport_settings_round_trip_through_the_snapshot_json(
    connect: float, retries: int, base: float, body: int
) -> None:
    shared: dict[str, Any] = {
        "connect_timeout": connect,
        "max_retries": retries,
        "backoff_base": base,
        "max_body_chars": body,
    }
    http = HttpPlannerSettings(url="http://127.0.0.1:9/x", **shared)
    llm = LlmSettings(base_url="http://127.0.0.1:9/v1", model="m", **shared)
    assert HttpPlannerSettings.from_json(http.to_json()) == http
    assert LlmSettings.from_json(llm.to_json()) == llm
    assert {k: http.to_json()[k] for k in TRANSPORT} == {k: llm.to_json()[k] for k in TRANSPORT}


@given(field=st.sampled_from(["connect_timeout", "idle_timeout", "total_timeout"]))
def test_a_non_positive_timeout_is_refused_by_both_with_their_own_words(field: str) -> None:
    zero: dict[str, Any] = {field: 0.0}
    with pytest.raises(PlannerError, match=f"^planner {field} must be positive$"):
        HttpPlannerSettings(url="http://h", **zero)
    with pytest.raises(LlmSettingsError, match=f"^LLM {field} must be positive$"):
        LlmSettings(base_url="http://h/v1", model="m", **{**zero, field: -1.0})
