"""The README's housing example killed while its irreversible export runs: the export is asked
about (in doubt), never repeated, and the run completes without running it again.

The blueprint is the shipped one, with the export cell held open after it wrote the model (a
gate that never opens) and logging each time it runs, so that the process is provably killed
mid-cell with the side effect done.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.journeys.conftest import HOUSING, cli, lab_notebook  # noqa: F401

pytestmark = pytest.mark.timeout(400)

HELD = """                  print("exported housing_model.pkl")
                  with open("export_log.txt", "a") as log:
                      log.write("export ran\\n")
                  while not os.path.exists("never.gate"):  # binds no name of its own
                      __import__("time").sleep(0.05)
"""


def _held_housing(folder: Path) -> Path:
    shutil.copytree(HOUSING, folder)
    blueprint = folder / "workflow.yaml"
    text = blueprint.read_text(encoding="utf-8")
    marker = '                  print("exported housing_model.pkl")\n'
    assert marker in text
    blueprint.write_text(text.replace(marker, HELD), encoding="utf-8")
    return folder


def _wait_for(path: Path, process: subprocess.Popen[bytes], timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, f"the run ended ({process.returncode}) before {path}"
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_a_run_killed_mid_export_asks_and_completes_without_exporting_again(
    tmp_path: Path,
    lab_notebook: Path,  # noqa: F811
) -> None:
    example = _held_housing(tmp_path / "housing")
    db = tmp_path / "state.sqlite"
    log = lab_notebook.parent / "export_log.txt"  # the kernel runs beside the notebook
    argv = [sys.executable, "-m", "notebook_bcc", "run", str(example), "--auto-confirm"]
    argv += ["--notebook", str(lab_notebook), "--state-db", str(db)]
    argv += ["--problem", "Predict house prices"]
    with (tmp_path / "run.log").open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_for(log, process)
        finally:
            os.killpg(process.pid, signal.SIGKILL)  # the run and its kernel, as kill -9 does
            process.wait()
    assert log.read_text() == "export ran\n"
    (lab_notebook.parent / "never.gate").touch()  # from now on the export cell would end at once
    told = cli("status", "--state-db", db).stdout
    assert "an irreversible action was running when it stopped (results/" in told, told
    assert "resume asks whether it happened" in told

    asked = cli("resume", "--state-db", db)
    assert asked.returncode == 3, asked.stdout + asked.stderr
    waiting = json.loads(cli("status", "--state-db", db, "--json").stdout)
    assert [p["kind"] for p in waiting["run"]["pending"]] == ["in_doubt"], waiting["run"]
    assert "did it happen" in asked.stdout + asked.stderr
    # it did happen: reject running it again; the run goes on without asking anything else
    settled = cli("resume", "--state-db", db, "--reject")
    assert settled.returncode == 0, settled.stdout + settled.stderr
    assert log.read_text() == "export ran\n", "the export ran once"
    status = json.loads(cli("status", "--state-db", db, "--json").stdout)
    assert status["fsm"]["state"] == "workflow_completed"
    assert status["run"]["status"] == "completed"
    finished = cli("resume", "--state-db", db)
    assert finished.returncode == 0
    assert "nothing to resume" in finished.stdout
    assert log.read_text() == "export ran\n"
