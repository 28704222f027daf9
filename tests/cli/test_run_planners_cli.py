"""``notebook-bcc run --planner http|replay`` and ``--record`` as real processes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli
from tests.planners.dslc_server import DSLC, DslcResponder, Received, ScriptedServer, closed_port

FAST = [
    "--planner-retries",
    "1",
    "--planner-backoff",
    "0.001",
    "--planner-backoff-cap",
    "0.002",
    "--planner-idle-timeout",
    "5",
]


def http_args(folder: Path, url: str, *extra: str | Path) -> list[str | Path]:
    return [
        "run",
        "--planner",
        "http",
        "--planner-url",
        url,
        "--problem",
        "Describe the house prices",
        "--file",
        DSLC / "prices.csv",
        "--notebook",
        folder / "nb.ipynb",
        "--state-db",
        folder / "state.sqlite",
        "--auto-confirm",
        *FAST,
        *extra,
    ]


def sources(notebook: Path) -> list[str]:
    return [cell.source for cell in nbformat.read(notebook, as_version=4).cells[1:]]


def status(folder: Path) -> dict[str, object]:
    done = cli("status", "--state-db", folder / "state.sqlite", "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_http_run_recorded_then_replayed_offline(tmp_path: Path) -> None:
    record = tmp_path / "record"
    with ScriptedServer(DslcResponder()) as server:
        done = cli(*http_args(tmp_path / "live", server.url, "--record", record))
        assert done.returncode == 0, done.stdout + done.stderr
        assert len(server.received) == 13
    live = sources(tmp_path / "live" / "nb.ipynb")
    assert live[2].startswith("import csv")
    assert (record / "transcript.jsonl").exists()
    assert (record / "inputs" / "prices.csv").exists()
    snapshot = status(tmp_path / "live")
    assert snapshot["planner"] == {
        "kind": "http",
        "settings": {**snapshot["planner"]["settings"], "record": str(record.resolve())},  # type: ignore[index]
    }

    replay = cli(
        "run",
        record,
        "--planner",
        "replay",
        "--notebook",
        tmp_path / "replay" / "nb.ipynb",
        "--auto-confirm",
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert sources(tmp_path / "replay" / "nb.ipynb") == live
    assert status(tmp_path / "replay")["planner"]["kind"] == "replay"  # type: ignore[index]


def test_unreachable_planner_fails_at_idle_with_a_status_to_read(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    done = cli(*http_args(tmp_path, url))
    assert done.returncode == 1, done.stdout + done.stderr
    snapshot = status(tmp_path)
    assert snapshot["fsm"]["state"] == "idle"  # type: ignore[index]
    run = snapshot["run"]
    assert run["status"] == "failed"  # type: ignore[index]
    assert "cannot connect" in run["reason"]  # type: ignore[index]
    assert "after 2 attempts" in run["reason"]  # type: ignore[index]
    text = cli("status", "--state-db", tmp_path / "state.sqlite")
    assert "run: failed" in text.stdout


def test_resume_retries_once_the_planner_is_back(tmp_path: Path) -> None:
    with ScriptedServer(DslcResponder()) as server:

        def at_first_stage_end(received: Received) -> bool:
            return received.state == "STAGE_COMPLETED" and received.stage == "explore"

        server.down_when = at_first_stage_end
        done = cli(*http_args(tmp_path, server.url))
        assert done.returncode == 1, done.stdout + done.stderr
        snapshot = status(tmp_path)
        assert snapshot["fsm"]["state"] == "stage_completed"  # type: ignore[index]
        assert snapshot["run"]["status"] == "failed"  # type: ignore[index]

        server.come_back()
        resumed = cli("resume", "--state-db", tmp_path / "state.sqlite", "--auto-confirm")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert status(tmp_path)["fsm"]["state"] == "workflow_completed"  # type: ignore[index]
    assert sources(tmp_path / "nb.ipynb")[-1] == "The mean price is printed above."


def test_blueprint_recorded_and_replayed(tmp_path: Path) -> None:
    """A blueprint with a confirmed stage: the approval is replayed from the recording."""
    record = tmp_path / "record"
    blueprint = FIXTURES / "engine" / "confirm.yaml"
    live = cli(
        "run",
        blueprint,
        "--notebook",
        tmp_path / "live" / "nb.ipynb",
        "--auto-confirm",
        "--record",
        record,
    )
    assert live.returncode == 0, live.stdout + live.stderr
    replay = cli(
        "run",
        record,
        "--planner",
        "replay",
        "--notebook",
        tmp_path / "replay" / "nb.ipynb",
        "--auto-confirm",
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert sources(tmp_path / "replay" / "nb.ipynb") == sources(tmp_path / "live" / "nb.ipynb")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--planner", "http", "--problem", "p"], "needs --planner-url"),
        (["--planner", "http", "--planner-url", "http://127.0.0.1:9"], "needs --problem"),
        (
            ["somewhere", "--planner", "http", "--planner-url", "http://127.0.0.1:9"],
            "takes no TARGET",
        ),
        (
            ["--planner", "http", "--planner-url", "http://u:p@127.0.0.1:9", "--problem", "p"],
            "credentials",
        ),
        (["--planner", "http", "--planner-url", "ftp://x", "--problem", "p"], "not an http"),
        (
            ["--planner", "http", "--planner-url", "http://[::1", "--problem", "p"],
            "planner URL 'http://[::1': it is malformed (Invalid IPv6 URL)",
        ),
        (
            ["--planner", "http", "--planner-url", "http://127.0.0.1:99999", "--problem", "p"],
            "it is malformed (Port out of range 0-65535)",
        ),
        (["--planner", "http", "--planner-url", "http://:80/x", "--problem", "p"], "names no host"),
        (
            [
                "--planner",
                "http",
                "--planner-url",
                "http://127.0.0.1:9",
                "--problem",
                "p",
                "--planner-token-env",
                "NOTEBOOK_BCC_TEST_NEVER_SET",
            ],
            "--planner-token-env NOTEBOOK_BCC_TEST_NEVER_SET: that environment variable is not",
        ),
        (["--planner", "replay"], "TARGET (a directory written by --record) is required"),
        ([], "TARGET (a blueprint) is required"),
        (
            [str(FIXTURES / "engine" / "paths.yaml"), "--planner-url", "http://127.0.0.1:9"],
            "--planner-url applies only to --planner http",
        ),
    ],
)
def test_bad_planner_input_exits_2(args: list[str], message: str) -> None:
    done = cli("run", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stderr


def test_replay_of_a_folder_without_a_recording_exits_2(tmp_path: Path) -> None:
    done = cli("run", tmp_path, "--planner", "replay")
    assert done.returncode == 2
    assert "no recording here" in done.stderr
    refused = cli("run", tmp_path, "--planner", "replay", "--problem", "other")
    assert refused.returncode == 2
    assert "uses the recorded problem" in refused.stderr


def test_record_refuses_a_directory_holding_a_recording(tmp_path: Path) -> None:
    (tmp_path / "transcript.jsonl").write_text('{"type": "header", "planner": {}}\n')
    done = cli("run", FIXTURES / "engine" / "paths.yaml", "--record", tmp_path)
    assert done.returncode == 2
    assert "already holds a recording" in done.stderr


def test_a_planned_run_that_completes_past_cells_that_raised_says_so(tmp_path: Path) -> None:
    """An AI planner may go on past a cell that raised (here the input "file" is a folder:
    reading it raises, and the next cell misses its variable); the run completes, exit 0,
    and the summary warns how many cells raised instead of saying only "completed"."""
    folder_file = tmp_path / "prices.csv"
    folder_file.mkdir()
    with ScriptedServer(DslcResponder()) as server:
        args = http_args(tmp_path, server.url)
        done = cli(*[folder_file if arg == DSLC / "prices.csv" else arg for arg in args])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "completed" in done.stdout
    warned = [line for line in done.stdout.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 1, done.stdout
    assert re.fullmatch(
        r"warning: [1-9]\d* cell\(s\) raised an error and the planner went on past them "
        r"\(the notebook and --junit-xml show each\)",
        warned[0],
    ), warned
