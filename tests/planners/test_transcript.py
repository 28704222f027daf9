"""A recorded transcript's header ``version``: only the versions this release reads are
replayed; any other (a newer number, 0, a string, a boolean) is refused as the transcript is
loaded, by ``notebook-bcc run DIR --planner replay`` as a user types it: one line naming the
file and the supported versions, exit 2, nothing run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from notebook_bcc.planners.transcript import (
    SUPPORTED_VERSIONS,
    UnsupportedTranscriptVersionError,
    read_transcript,
)
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

RECORDING = FIXTURES / "planners" / "chain_record"
"""A complete recording of the ``chain`` blueprint (header version 1)."""


def _recording(folder: Path, version: object) -> Path:
    """A copy of :data:`RECORDING` in ``folder`` whose header says ``version``."""
    shutil.copytree(RECORDING, folder)
    path = folder / "transcript.jsonl"
    header, *rest = path.read_text(encoding="utf-8").splitlines()
    data = json.loads(header)
    data["version"] = version
    path.write_text("\n".join([json.dumps(data), *rest]) + "\n", encoding="utf-8")
    return folder.resolve()


@pytest.mark.parametrize(
    "version", [99, 0, "1", True, 1.0], ids=["99", "0", "string", "boolean", "float"]
)
def test_an_unsupported_version_is_refused_in_one_line(tmp_path: Path, version: object) -> None:
    folder = _recording(tmp_path / "rec", version)
    out = tmp_path / "out"
    done = cli("run", folder, "--planner", "replay", "--notebook", out / "nb.ipynb")
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr
    assert "Traceback" not in done.stderr
    (line,) = [text for text in done.stderr.splitlines() if text.strip()]
    assert line == (
        f"error: {folder / 'transcript.jsonl'}:1: unsupported transcript version "
        f"{json.dumps(version)}; this notebook-bcc reads version 1"
    )
    assert not out.exists()
    with pytest.raises(UnsupportedTranscriptVersionError) as raised:
        read_transcript(folder)
    assert raised.value.details["supported"] == list(SUPPORTED_VERSIONS) == [1]


def test_the_supported_version_replays(tmp_path: Path) -> None:
    """The same recording at version 1 replays to the end (the refusal above is the
    version's doing, not the recording's)."""
    folder = _recording(tmp_path / "rec", 1)
    done = cli("run", folder, "--planner", "replay", "--notebook", tmp_path / "out" / "nb.ipynb")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
