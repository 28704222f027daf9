"""``--record DIR`` and ``--planner replay``: transcripts, strict replay, resume, planner_for."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import nbformat
import pytest

from notebook_bcc.blueprint.loader import load_blueprint_file
from notebook_bcc.engine.headless import HeadlessRun, close_headless, open_headless, planner_for
from notebook_bcc.engine.options import EngineOptions
from notebook_bcc.errors import NotebookBccError
from notebook_bcc.models.names import State
from notebook_bcc.planners.base import (
    Planner,
    PlannerError,
    PlannerReply,
    PlannerRequest,
    StageRoute,
)
from notebook_bcc.planners.blueprint import BlueprintPlanner
from notebook_bcc.planners.http import HttpPlanner
from notebook_bcc.planners.recording import RecordingPlanner
from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transcript import TranscriptError, read_transcript
from notebook_bcc.protocol.parse import parse_payload
from notebook_bcc.protocol.payloads import PayloadModel
from tests.conftest import FIXTURES
from tests.planners.conftest import request, snapshot_at
from tests.planners.dslc_server import DSLC

S = State
PATHS = FIXTURES / "engine" / "paths.yaml"


def run_blueprint(folder: Path, planner: Planner, files: list[Path]) -> list[str]:
    """Run to the end; the notebook's cell sources after the inputs cell."""

    async def scenario() -> None:
        engine = await open_headless(
            HeadlessRun(
                planner=planner,
                notebook=folder / "nb.ipynb",
                state_db=folder / "state.sqlite",
                problem="paths",
                files=files,
                options=EngineOptions(auto_confirm=True, write_debounce=0.05),
            )
        )
        try:
            result = await engine.run()
        finally:
            await close_headless(engine)
        assert result.exit_code == 0, result.snapshot.run

    asyncio.run(scenario())
    notebook = nbformat.read(folder / "nb.ipynb", as_version=4)
    return [cell.source for cell in notebook.cells[1:]]


def test_blueprint_run_with_loops_recorded_and_replayed(tmp_path: Path) -> None:
    record = tmp_path / "record"
    blueprint = BlueprintPlanner(load_blueprint_file(PATHS))
    recorder = RecordingPlanner(blueprint, record)
    assert recorder.kind == "blueprint"
    assert recorder.fail_steps_on_gaps is True, "forwarded to the engine"
    data = tmp_path / "data.csv"
    data.write_text("a\n1\n")
    live = run_blueprint(tmp_path / "live", recorder, [data])

    transcript = read_transcript(record)
    assert transcript.header is not None
    assert transcript.header.planner["kind"] == "blueprint"
    assert transcript.header.fail_steps_on_gaps is True
    assert [f.path for f in transcript.header.files] == ["inputs/data.csv"]
    routes = [ex for ex in transcript.exchanges if ex.point == "route_stage"]
    targets = [ex.route["target"] for ex in routes if ex.route is not None]
    assert targets == ["second", "first", "second", None], "the loop back is recorded"
    assert [ex.n for ex in transcript.exchanges] == list(range(1, len(transcript.exchanges) + 1))
    nones = [ex for ex in transcript.exchanges if ex.point == "plan_behavior" and ex.body is None]
    assert all(ex.payload is None for ex in nones)

    replayer = ReplayPlanner(record)
    assert replayer.settings()["max_hops"] == blueprint.settings()["max_hops"]
    replayed = run_blueprint(tmp_path / "replay", replayer, replayer.files())
    assert replayed == live
    assert replayer.position == len(transcript.exchanges)


# -- unit level: a stub planner recorded --------------------------------------------------


class Stub:
    """Answers from the DSLC fixture files; fails on demand."""

    kind = "http"
    fail_steps_on_gaps = False

    def __init__(self) -> None:
        self.fail_next: NotebookBccError | None = None

    def settings(self) -> dict[str, Any]:
        return {"url": "http://127.0.0.1:9"}

    def _reply(self, name: str) -> PlannerReply:
        if self.fail_next is not None:
            error, self.fail_next = self.fail_next, None
            raise error
        path = DSLC / name
        ctype = {".xml": "application/xml", ".json": "application/json"}.get(
            path.suffix, "application/x-ndjson"
        )
        text = path.read_text()
        return PlannerReply(parse_payload(text), text, ctype)

    async def plan_stages(self, request: PlannerRequest) -> PlannerReply:
        return self._reply("planning.IDLE.xml")

    async def plan_steps(self, request: PlannerRequest) -> PlannerReply:
        return self._reply("planning.STAGE_RUNNING.explore.xml")

    async def plan_behavior(self, request: PlannerRequest) -> PlannerReply | None:
        if request.snapshot.fsm.state is S.BEHAVIOR_RUNNING:
            return None
        return self._reply("planning.STEP_RUNNING.explore.xml")

    async def generate_actions(self, request: PlannerRequest) -> PlannerReply:
        return self._reply("generating.BEHAVIOR_RUNNING.explore.ndjson")

    async def reflect_behavior(self, request: PlannerRequest) -> PlannerReply:
        return self._reply("reflecting.BEHAVIOR_COMPLETED.summarize.ndjson")

    async def reflect_stage(self, request: PlannerRequest) -> PlannerReply:
        return self._reply("reflecting.STEP_COMPLETED.explore.xml")

    async def route_stage(
        self, request: PlannerRequest, *, decided: Literal["success", "failure"] | None = None
    ) -> StageRoute:
        return StageRoute("success", "summarize", rule="stub", warnings=("w",))

    async def aclose(self) -> None:
        pass


def counted(req: PlannerRequest, calls: int) -> PlannerRequest:
    """``req`` from a run that had counted ``calls`` planner answers (as the engine does)."""
    usage = req.snapshot.usage.model_copy(update={"calls": calls})
    snap = req.snapshot.model_copy(update={"usage": usage})
    return PlannerRequest(req.point, snap, req.observation, req.behavior_feedback)


def record_some(directory: Path, stub: Stub | None = None) -> list[Any]:
    """Record plan_stages, plan_behavior (None), generate_actions and a route."""
    recorder = RecordingPlanner(stub or Stub(), directory)

    async def scenario() -> list[Any]:
        return [
            await recorder.plan_stages(request("plan_stages", S.IDLE)),
            await recorder.plan_behavior(
                counted(
                    request("plan_behavior", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b"),
                    1,
                )
            ),
            await recorder.generate_actions(
                counted(
                    request(
                        "generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b"
                    ),
                    2,
                )
            ),
            await recorder.route_stage(
                counted(request("route_stage", S.STAGE_COMPLETED, stage="a"), 3),
                decided="success",
            ),
        ]

    return asyncio.run(scenario())


def test_exchanges_hold_state_location_digest_body_and_payload(tmp_path: Path) -> None:
    answers = record_some(tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "transcript.jsonl").read_text().splitlines()]
    assert [line["type"] for line in lines] == ["header", *["exchange"] * 4]
    first = lines[1]
    assert first["point"] == "plan_stages"
    assert first["fsm_state"] == "idle"
    assert first["location"] == {
        "stage_id": None,
        "step_id": None,
        "behavior_id": None,
        "behavior_iteration": 0,
    }
    assert first["content_type"] == "application/xml"
    assert first["body"] == (DSLC / "planning.IDLE.xml").read_text()
    assert PayloadModel.model_validate(first["payload"]).root == answers[0].payload
    assert len(first["request_digest"]) == 64
    assert lines[2]["body"] is None
    assert lines[2]["payload"] is None
    assert lines[4]["route"]["target"] == "summarize"
    assert lines[4]["decided"] == "success"


def test_replay_plays_the_decoded_payloads_back(tmp_path: Path) -> None:
    answers = record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)

    async def scenario() -> list[Any]:
        return [
            await replayer.plan_stages(request("plan_stages", S.IDLE)),
            await replayer.plan_behavior(
                request("plan_behavior", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
            ),
            await replayer.generate_actions(
                request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
            ),
            await replayer.route_stage(
                request("route_stage", S.STAGE_COMPLETED, stage="a"), decided="success"
            ),
        ]

    replayed = asyncio.run(scenario())
    assert replayed[0].payload == answers[0].payload
    assert replayed[0].body == answers[0].body
    assert replayed[0].content_type == "application/xml"
    assert replayed[1] is None
    assert replayed[2].payload == answers[2].payload
    assert replayed[3] == answers[3]
    assert replayer.problem == "test problem"
    assert replayer.digest_mismatches == 0


def test_a_request_in_another_state_is_an_error_naming_the_exchange(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)

    async def scenario() -> None:
        await replayer.plan_stages(request("plan_stages", S.IDLE))
        await replayer.plan_behavior(request("plan_behavior", S.STEP_RUNNING, stage="a", step="s"))

    with pytest.raises(PlannerError) as caught:
        asyncio.run(scenario())
    assert caught.value.message.startswith("replay: exchange 2 was recorded as plan_behavior at ")
    assert "behavior_running" in caught.value.message
    assert "but the run asks plan_behavior at step_running" in caught.value.message
    assert caught.value.details["exchange"] == 2


def test_another_location_is_a_mismatch(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)

    async def scenario() -> None:
        await replayer.plan_stages(request("plan_stages", S.IDLE))
        await replayer.plan_behavior(
            request("plan_behavior", S.BEHAVIOR_RUNNING, stage="other", step="s", behavior="b")
        )

    with pytest.raises(PlannerError, match=r"exchange 2 .*stage_id=a.*stage_id=other"):
        asyncio.run(scenario())


def test_a_different_human_answer_is_a_mismatch(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)
    replayer._cursor = 3

    with pytest.raises(PlannerError, match="exchange 4 was routed with the human answer"):
        asyncio.run(
            replayer.route_stage(
                request("route_stage", S.STAGE_COMPLETED, stage="a"), decided="failure"
            )
        )


def test_the_end_of_the_recording_is_an_error(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)
    replayer._cursor = 4
    with pytest.raises(PlannerError, match="the recording ends after exchange 4"):
        asyncio.run(replayer.plan_stages(request("plan_stages", S.IDLE)))


def test_the_digest_is_informational(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)
    changed = request("plan_stages", S.IDLE)
    changed.observation["state"]["FSM"]["timestamp"] = "another time"
    reply = asyncio.run(replayer.plan_stages(changed))
    assert reply.payload.kind == "stages"
    assert replayer.digest_mismatches == 1


def test_a_rebuilt_replay_finds_its_place_from_the_answers_counted(tmp_path: Path) -> None:
    record_some(tmp_path)
    replayer = ReplayPlanner(tmp_path)
    req = request("generate_actions", S.BEHAVIOR_RUNNING, stage="a", step="s", behavior="b")
    reply = asyncio.run(replayer.generate_actions(counted(req, 2)))
    assert reply.payload.kind == "json-actions"
    assert replayer.position == 3


def test_errors_are_recorded_and_skipped_by_replay(tmp_path: Path) -> None:
    stub = Stub()
    recorder = RecordingPlanner(stub, tmp_path)

    async def scenario() -> None:
        stub.fail_next = PlannerError("server down", details={"body": "x" * 50_000})
        with pytest.raises(PlannerError):
            await recorder.plan_stages(request("plan_stages", S.IDLE))
        await recorder.plan_stages(request("plan_stages", S.IDLE))

    asyncio.run(scenario())
    transcript = read_transcript(tmp_path)
    (error,) = transcript.errors
    assert (error.point, error.message, error.after) == ("plan_stages", "server down", 0)
    assert len(error.details["body"]) < 50_000, "bounded"
    assert [ex.n for ex in transcript.exchanges] == [1]
    replayed = asyncio.run(ReplayPlanner(tmp_path).plan_stages(request("plan_stages", S.IDLE)))
    assert replayed.payload.kind == "stages"


def test_record_refuses_a_used_directory_and_resume_appends(tmp_path: Path) -> None:
    record_some(tmp_path)
    with pytest.raises(TranscriptError, match="already holds a recording"):
        RecordingPlanner(Stub(), tmp_path)
    again = RecordingPlanner(Stub(), tmp_path, append=True)
    assert again.exchanges == 4
    asyncio.run(again.plan_stages(request("plan_stages", S.IDLE)))
    transcript = read_transcript(tmp_path)
    assert [ex.n for ex in transcript.exchanges] == [1, 2, 3, 4, 5]
    assert transcript.header is not None, "one header"


def test_inputs_with_the_same_name_are_all_kept(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "data.csv").write_text("first")
    (tmp_path / "b" / "data.csv").write_text("second")
    snap = snapshot_at(S.IDLE).model_copy(
        update={"files": [str(tmp_path / "a" / "data.csv"), str(tmp_path / "b" / "data.csv")]}
    )
    record = tmp_path / "record"
    recorder = RecordingPlanner(Stub(), record)
    asyncio.run(recorder.plan_stages(PlannerRequest("plan_stages", snap, {})))
    replayer = ReplayPlanner(record)
    assert [p.read_text() for p in replayer.files()] == ["first", "second"]
    assert [p.name for p in replayer.files()] == ["data.csv", "data-2.csv"]


def test_replay_without_a_recording_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TranscriptError, match="no recording here"):
        ReplayPlanner(tmp_path)
    (tmp_path / "transcript.jsonl").write_text('{"type": "header", "planner": {}}\nnot json\n')
    with pytest.raises(TranscriptError, match=r"transcript.jsonl:2"):
        ReplayPlanner(tmp_path)


def test_planner_for_rebuilds_every_kind(tmp_path: Path) -> None:
    http = planner_for(
        {"kind": "http", "settings": {"url": "http://127.0.0.1:9", "max_retries": 7}}
    )
    assert isinstance(http, HttpPlanner)
    assert http.config.max_retries == 7
    record_some(tmp_path / "rec")
    replay = planner_for({"kind": "replay", "settings": {"transcript": str(tmp_path / "rec")}})
    assert isinstance(replay, ReplayPlanner)
    recorded = planner_for(
        {
            "kind": "blueprint",
            "settings": {"path": str(PATHS), "record": str(tmp_path / "rec")},
        }
    )
    assert isinstance(recorded, RecordingPlanner)
    assert isinstance(recorded.inner, BlueprintPlanner)
    assert recorded.exchanges == 4, "resume continues the same transcript"
    with pytest.raises(NotebookBccError, match="cannot resume"):
        planner_for({"kind": "llm", "settings": {}})


def test_a_confirmed_stage_replays_with_the_recorded_human_answer(tmp_path: Path) -> None:
    record = tmp_path / "record"
    blueprint = BlueprintPlanner(load_blueprint_file(FIXTURES / "engine" / "confirm.yaml"))
    live = run_blueprint(tmp_path / "live", RecordingPlanner(blueprint, record), [])
    routes = [ex for ex in read_transcript(record).exchanges if ex.point == "route_stage"]
    assert [(ex.decided, (ex.route or {}).get("outcome")) for ex in routes][:2] == [
        (None, "pause"),
        ("success", "success"),
    ]
    replayer = ReplayPlanner(record)
    assert run_blueprint(tmp_path / "replay", replayer, replayer.files()) == live
