"""The server's ``replay`` planner: a run recorded headless plays back over REST."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES
from tests.server.conftest import Api


def _code_sources(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return [
        "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
        for c in cells
        if c["cell_type"] == "code" and "notebook-bcc inputs" not in "".join(c["source"])
    ]


async def test_a_recorded_run_replays_over_rest(api: Api, root: Path) -> None:
    recorded = root / "recorded"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "notebook_bcc",
            "run",
            str(FIXTURES / "engine" / "paths.yaml"),
            "--auto-confirm",
            "--notebook",
            str(root / "headless" / "nb.ipynb"),
            "--state-db",
            str(root / "headless" / "state.sqlite"),
            "--record",
            str(recorded),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    code, started = await api.call(
        "POST",
        "workflows",
        body={
            "notebook_path": "work/replayed.ipynb",
            "planner": {"kind": "replay", "path": "recorded"},
            "options": {"auto_confirm": True},
        },
    )
    assert code == 201, started
    assert started["planner"]["kind"] == "replay"
    finished = await api.wait_status(started["workflow_id"], "completed", "failed")
    assert finished["run"]["status"] == "completed", finished["run"]
    assert _code_sources(root / "work" / "replayed.ipynb") == _code_sources(
        root / "headless" / "nb.ipynb"
    )
