"""The replay planner refuses transcripts that name files outside their folder, or are huge
(issue 19.4): ``notebook-bcc run DIR --planner replay`` exits 2 naming file and entry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transcript import MAX_TRANSCRIPT_BYTES, TranscriptError
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli


def _record(folder: Path, files: list[dict[str, str]]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    header = {
        "type": "header",
        "format": "notebook-bcc-transcript",
        "version": 1,
        "planner": {"kind": "blueprint", "settings": {}},
        "problem": "p",
        "files": files,
    }
    (folder / "transcript.jsonl").write_text(json.dumps(header) + "\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize("bad", ["/etc/passwd", "../outside.csv", "inputs/../../x.csv", "."])
def test_a_file_outside_the_record_folder_is_refused(tmp_path: Path, bad: str) -> None:
    planner = ReplayPlanner(_record(tmp_path / "rec", [{"source": "x.csv", "path": bad}]))
    with pytest.raises(TranscriptError, match=r"files\[0\]\.path"):
        planner.files()


def test_inputs_inside_the_folder_are_kept(tmp_path: Path) -> None:
    folder = _record(tmp_path / "rec", [{"source": "x.csv", "path": "inputs/x.csv"}])
    assert ReplayPlanner(folder).files() == [folder.resolve() / "inputs" / "x.csv"]


def test_an_oversized_transcript_is_refused_before_it_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    folder.mkdir()
    with (folder / "transcript.jsonl").open("wb") as handle:
        handle.truncate(MAX_TRANSCRIPT_BYTES + 1)  # sparse: costs no disk and is never read
    with pytest.raises(TranscriptError, match="the limit is"):
        ReplayPlanner(folder)


def test_the_cli_exits_2_naming_the_transcript_entry(tmp_path: Path) -> None:
    folder = _record(tmp_path / "rec", [{"source": "x", "path": "/etc/passwd"}])
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(folder),
            "--planner",
            "replay",
            "--notebook",
            str(tmp_path / "out" / "nb.ipynb"),
            "--state-db",
            str(tmp_path / "out" / "s.db"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert f"{folder / 'transcript.jsonl'}: header files[0].path '/etc/passwd'" in done.stderr
    assert not (tmp_path / "out" / "nb.ipynb").exists()


def _not_utf8(folder: Path) -> str:
    _record(folder, [])
    with (folder / "transcript.jsonl").open("ab") as handle:
        handle.write(b'{"type": "exchange"\xff}\n')
    return "transcript.jsonl:2: not UTF-8 text (byte 20 of the line)"


def _a_directory(folder: Path) -> str:
    (folder / "transcript.jsonl").mkdir()
    return "transcript.jsonl: not a file"


def _bad_header(folder: Path) -> str:
    # a version that is no number is refused as such (tests/planners/test_transcript.py)
    (folder / "transcript.jsonl").write_text('{"type": "header", "version": 1, "files": 3}\n')
    return "transcript.jsonl:1: not a transcript line: planner: Field required (and 1 more)"


@pytest.mark.parametrize("damage", [_not_utf8, _a_directory, _bad_header])
def test_a_damaged_transcript_is_one_line_naming_file_and_line(tmp_path: Path, damage: Any) -> None:
    """Bytes that are not UTF-8, a folder where the transcript should be, a header of the
    wrong shape: exit 2 with one line naming the file (and line), never a traceback, and
    nothing written."""
    folder = tmp_path / "rec"
    folder.mkdir()
    expected = damage(folder)
    out = tmp_path / "out"
    done = cli("run", folder, "--planner", "replay", "--notebook", out / "nb.ipynb")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.strip()]
    assert expected in line, line
    assert not (out / "nb.ipynb").exists()


def _answer_one_at_a_time(db: Path) -> list[int]:
    """``resume --approve`` until the run stops waiting; the exit codes."""
    codes = []
    for _ in range(6):
        done = cli("resume", "--state-db", db, "--approve")
        codes.append(done.returncode)
        assert "Traceback" not in done.stderr
        if done.returncode != 3:
            break
    return codes


def _sources(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells]


@pytest.mark.parametrize("recorded_one_at_a_time", [False, True])
def test_a_recording_replays_with_its_decisions_answered_one_at_a_time(
    tmp_path: Path, recorded_one_at_a_time: bool
) -> None:
    """A replay stopped for a human and resumed with the answer found the recorded pause
    again and failed: 'exchange N was routed with the human answer None, but the run
    answered success'."""
    blueprint = FIXTURES / "engine" / "confirm.yaml"
    record = tmp_path / "record"
    live = tmp_path / "live"
    auto = [] if recorded_one_at_a_time else ["--auto-confirm"]
    first = cli("run", blueprint, "--record", record, "--notebook", live / "nb.ipynb", *auto)
    if recorded_one_at_a_time:
        assert first.returncode == 3, first.stdout + first.stderr
        assert _answer_one_at_a_time(live / "state.sqlite")[-1] == 0
    else:
        assert first.returncode == 0, first.stdout + first.stderr
    for mode in ("one-at-a-time", "auto-confirm"):
        folder = tmp_path / mode
        flags = ["--auto-confirm"] if mode == "auto-confirm" else []
        replay = cli(
            "run", record, "--planner", "replay", "--notebook", folder / "nb.ipynb", *flags
        )
        if mode == "one-at-a-time":
            assert replay.returncode == 3, replay.stdout + replay.stderr
            codes = _answer_one_at_a_time(folder / "state.sqlite")
            assert codes[-1] == 0, codes
        else:
            assert replay.returncode == 0, replay.stdout + replay.stderr
        status = cli("status", "--state-db", folder / "state.sqlite")
        assert "run: completed" in status.stdout, status.stdout
        assert _sources(folder / "nb.ipynb")[1:] == _sources(live / "nb.ipynb")[1:]
