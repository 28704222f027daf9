"""Every recorded answer of a transcript is decoded when the transcript is loaded (with the
parser the replay answers with): a malformed one is refused then, naming the file and line,
before a replay starts a kernel and fails at that answer mid-run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from notebook_bcc.planners.replay import ReplayPlanner
from notebook_bcc.planners.transcript import TranscriptError, decoded_payload, read_transcript
from tests.conftest import FIXTURES

RECORDING = FIXTURES / "planners" / "chain_record"
"""A complete recording of the ``chain`` blueprint (a header and 7 exchanges)."""


def corrupted_recording(folder: Path, line: int, change: Any) -> Path:
    """A copy of :data:`RECORDING` in ``folder`` with ``change(record)`` applied to the
    record on 1-based ``line``."""
    shutil.copytree(RECORDING, folder)
    path = folder / "transcript.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[line - 1])
    change(record)
    lines[line - 1] = json.dumps(record)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder.resolve()


def _actions_not_a_list(record: dict[str, Any]) -> None:
    record["payload"]["actions"] = "not a list"


def _bad_body_no_payload(record: dict[str, Any]) -> None:
    record["payload"] = None
    record["body"] = "hello"  # neither JSON nor a planner XML root


def test_a_bad_payload_is_refused_on_load_naming_file_and_line(tmp_path: Path) -> None:
    folder = corrupted_recording(tmp_path / "rec", 5, _actions_not_a_list)
    with pytest.raises(TranscriptError) as raised:
        read_transcript(folder)
    assert raised.value.message == (
        f"{folder / 'transcript.jsonl'}:5: exchange 4 (generate_actions): bad recorded "
        "payload: json-actions.actions: Input should be a valid list"
    )
    with pytest.raises(TranscriptError):  # the planner is never built from it
        ReplayPlanner(folder)


def test_a_bad_body_without_payload_is_refused_on_load(tmp_path: Path) -> None:
    folder = corrupted_recording(tmp_path / "rec", 2, _bad_body_no_payload)
    with pytest.raises(TranscriptError) as raised:
        read_transcript(folder)
    message = raised.value.message
    assert message == (
        f"{folder / 'transcript.jsonl'}:2: exchange 1 (plan_stages): bad recorded body: "
        "line 1: cannot tell the payload kind: neither JSON nor a planner XML root (<stages>, "
        "<workflow>, <steps>, <behavior>, <actions>, <reflection>, <stage_reflection>)"
    )


def test_the_good_recording_loads_and_decodes_every_answer() -> None:
    transcript = read_transcript(RECORDING)
    assert len(transcript.exchanges) == 7
    kinds = [getattr(decoded_payload(ex), "kind", None) for ex in transcript.exchanges]
    assert kinds[:6] == [
        "stages",
        "steps",
        "behavior",
        "json-actions",
        "reflection",
        "stage_reflection",
    ]
