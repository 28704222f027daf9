"""CLI: ``notebook-bcc apply`` and ``notebook-bcc observe`` on snapshots and reference states."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from notebook_bcc.models.snapshot import new_snapshot
from tests.workflow.test_apply_chain import fixture_path, snapshot_before
from tests.workflow.test_apply_reference import STAGE_RUNNING


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write_json(path: Path, data: object) -> str:
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.fixture
def idle_state(tmp_path: Path) -> str:
    snapshot = new_snapshot("w", "r", problem="price", files=["./assets/housing.csv"])
    return write_json(tmp_path / "idle.json", snapshot.model_dump(mode="json", by_alias=True))


def test_apply_prints_the_event_and_the_next_snapshot(
    capsys: pytest.CaptureFixture[str], idle_state: str
) -> None:
    code, out, err = run_cli(
        capsys,
        "apply",
        "--state",
        idle_state,
        str(fixture_path("00_stages.txt")),
        "--at",
        "2025-01-01T00:00:00Z",
    )
    assert code == 0
    source = str(fixture_path("00_stages.txt"))
    assert err.splitlines()[0] == f"{source}: repaired line 1: text before the root element dropped"
    assert (
        err.splitlines()[-1] == f"{source}: repaired line 34: text after the root element dropped"
    )
    result = json.loads(out)
    assert [f"{source}: {line}" for line in result["repairs"]] == err.splitlines()
    assert result["event"] == "START_WORKFLOW"
    assert result["events"] == ["START_WORKFLOW"]
    assert result["warnings"] == []
    assert result["pending"] == []
    snapshot = result["snapshot"]
    assert snapshot["fsm"]["state"] == "stage_running"
    assert snapshot["fsm"]["history"][0]["from"] == "idle"
    assert snapshot["fsm"]["timestamp"] == "2025-01-01T00:00:00Z"
    assert snapshot["location"]["current"]["stage_id"] == "data_loading"


def test_apply_output_feeds_the_next_apply(
    capsys: pytest.CaptureFixture[str], idle_state: str, tmp_path: Path
) -> None:
    _, out, _ = run_cli(capsys, "apply", "--state", idle_state, str(fixture_path("00_stages.txt")))
    state = write_json(tmp_path / "next.json", json.loads(out)["snapshot"])
    code, out, _ = run_cli(
        capsys,
        "apply",
        "--state",
        state,
        str(fixture_path("01_steps_loading.xml")),
        "--kind",
        "steps",
    )
    assert code == 0
    assert json.loads(out)["event"] == "START_STEP"


def test_apply_accepts_a_reference_client_state(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    state = write_json(tmp_path / "ref.json", STAGE_RUNNING)
    code, out, _ = run_cli(
        capsys, "apply", "--state", state, str(fixture_path("01_steps_loading.xml"))
    )
    assert code == 0
    result = json.loads(out)
    assert result["event"] == "START_STEP"
    assert result["snapshot"]["workflow_id"] == "imported"


def test_apply_reads_the_payload_from_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, idle_state: str
) -> None:
    import io
    import sys

    data = fixture_path("00_stages.txt").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run_cli(capsys, "apply", "--state", idle_state, "-")
    assert code == 0
    assert json.loads(out)["event"] == "START_WORKFLOW"


def test_an_illegal_payload_exits_2_with_the_typed_error(
    capsys: pytest.CaptureFixture[str], idle_state: str
) -> None:
    payload = str(fixture_path("04_reflection_load_continue.xml"))
    code, out, err = run_cli(capsys, "apply", "--state", idle_state, payload)
    assert code == 2
    assert out == ""
    assert err == (
        f"error: {payload}: reflection payload in state idle: not legal in this state; "
        "a reflection payload is accepted in: behavior_completed\n"
    )


def test_a_contradictory_payload_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snapshot = snapshot_before("12_stage_reflection_complete.xml")
    state = write_json(tmp_path / "s.json", snapshot.model_dump(mode="json", by_alias=True))
    payload = str(fixture_path("08_stage_reflection_next_step.xml"))
    code, _, err = run_cli(capsys, "apply", "--state", state, payload)
    assert code == 2
    assert "no step remains in the stage (D17 protocol error)" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "No such file or directory"),
        ("{not json", "invalid JSON: Expecting property name"),
        ('{"state": {"FSM": {"state": "FLYING"}}}', "state document at /state/FSM/state"),
    ],
)
def test_bad_state_files_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None, message: str
) -> None:
    state = tmp_path / "state.json"
    if content is not None:
        state.write_text(content, encoding="utf-8")
    for argv in (
        ["apply", "--state", str(state), str(fixture_path("00_stages.txt"))],
        ["observe", "--state", str(state)],
    ):
        code, out, err = run_cli(capsys, *argv)
        assert code == 2
        assert out == ""
        assert err.startswith(f"error: {state}: ")
        assert message in err


def test_a_malformed_payload_exits_2_naming_the_line(
    capsys: pytest.CaptureFixture[str], idle_state: str, tmp_path: Path
) -> None:
    payload = tmp_path / "p.json"
    payload.write_text('{"targetAchieved": "maybe"}', encoding="utf-8")
    code, _, err = run_cli(capsys, "apply", "--state", idle_state, str(payload))
    assert code == 2
    assert err.startswith(f"error: {payload}:1:")
    missing = run_cli(capsys, "apply", "--state", idle_state, str(tmp_path / "nope.xml"))
    assert missing[0] == 2
    assert "No such file or directory" in missing[2]


def test_observe_prints_the_state_form(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = write_json(tmp_path / "ref.json", STAGE_RUNNING)
    code, out, _ = run_cli(capsys, "observe", "--state", state)
    assert code == 0
    doc = json.loads(out)
    assert doc["state"]["FSM"]["state"] == "STAGE_RUNNING"
    assert doc["observation"]["location"]["current"]["stage_id"] == "data_loading"


def test_observe_context_form_with_a_filter_and_a_notebook(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    snapshot = snapshot_before("09_behavior_inventory_b1.xml")
    state = write_json(tmp_path / "s.json", snapshot.model_dump(mode="json", by_alias=True))
    flt = write_json(
        tmp_path / "f.json", {"context_filter": {"variables_to_include": ["df_raw", "ghost"]}}
    )
    cells = [{"cell_type": "markdown", "source": "# Housing"}] + [
        {"cell_type": "code", "source": f"x{i} = {i}"} for i in range(300)
    ]
    notebook = write_json(tmp_path / "n.ipynb", {"cells": cells, "nbformat": 4})
    code, out, err = run_cli(
        capsys,
        "observe",
        "--state",
        state,
        "--format",
        "context",
        "--case",
        "lower",
        "--filter",
        flt,
        "--notebook",
        notebook,
        "--max-chars",
        "30000",
    )
    assert code == 0
    doc = json.loads(out)
    context = doc["observation"]["context"]
    assert context["FSM"]["state"] == "step_running"
    assert list(context["variables"]) == ["df_raw"]
    assert context["effects"]["current"][-1] == "WARN: Variable 'ghost' not found"
    assert context["notebook"]["digest"]["title"] == "Housing"
    assert context["notebook"]["digest"]["more"] == "261 more cells not shown"
    assert len(out) < 40_000
    assert "trimmed: /observation/context/notebook/digest: 261 more cells not shown\n" in err


def test_a_truncated_payload_exits_2_and_applies_nothing(
    capsys: pytest.CaptureFixture[str], idle_state: str, tmp_path: Path
) -> None:
    text = fixture_path("00_stages.txt").read_text(encoding="utf-8")
    payload = tmp_path / "cut.xml"
    payload.write_text(text[: text.index('<stage id="eda"')], encoding="utf-8")
    code, out, err = run_cli(capsys, "apply", "--state", idle_state, str(payload))
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {payload}: stages payload in state idle: the <stages> ")
    assert "truncated" in err
    assert "nothing was applied" in err


def test_observe_lists_what_the_budget_trimmed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = json.loads(json.dumps(STAGE_RUNNING))
    document["state"]["notebook"]["cells"] = [
        {"cell_type": "code", "source": f"x{i} = {i}\n" * 40, "outputs": []} for i in range(60)
    ]
    state = write_json(tmp_path / "ref.json", document)
    code, out, err = run_cli(capsys, "observe", "--state", state, "--max-chars", "8000")
    assert code == 0
    notebook = json.loads(out)["state"]["notebook"]
    assert notebook["cell_count"] == 60
    kept = len(notebook["cells"])
    assert 0 < kept < 60
    assert notebook["cells"][-1]["source"].startswith("x59 = 59")
    assert f"trimmed: /state/notebook: {60 - kept} cells left out" in err.splitlines()


def test_observe_bad_filter_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    state = write_json(tmp_path / "ref.json", STAGE_RUNNING)
    flt = write_json(tmp_path / "f.json", {"variables_to_summarize": {"x": "everything"}})
    code, _, err = run_cli(capsys, "observe", "--state", state, "--filter", flt)
    assert code == 2
    assert err.startswith(f"error: {flt}: /variables_to_summarize/x")
