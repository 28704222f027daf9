"""``notebook-bcc run DIR --planner replay`` with a recording whose 5th record holds a
malformed payload: refused as the transcript is loaded (one line naming the file, the line
and what is wrong, exit 2), no kernel started, no notebook written."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import run_cli
from tests.planners.test_transcript_payloads import _actions_not_a_list, corrupted_recording


def test_a_bad_recorded_payload_is_refused_before_the_run(tmp_path: Path) -> None:
    folder = corrupted_recording(tmp_path / "rec", 5, _actions_not_a_list)
    out = tmp_path / "out"
    done = run_cli("run", folder, "--planner", "replay", "--notebook", out / "nb.ipynb")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    assert "Traceback" not in done.stderr
    assert "ValidationError" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.strip()]
    assert line == (
        f"error: {folder / 'transcript.jsonl'}:5: exchange 4 (generate_actions): bad "
        "recorded payload: json-actions.actions: Input should be a valid list"
    )
    assert done.stdout == ""  # no turn was run
    assert not out.exists()  # no notebook, no state database, no folder
