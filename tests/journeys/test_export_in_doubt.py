"""The README's housing example killed while its irreversible export runs: the export is asked
about (in doubt), never repeated, and the run completes without running it again.

The blueprint is the shipped one, with the export cell held open after it wrote the model (a
gate that never opens) and logging each time it runs, so that the process is provably killed
mid-cell with the side effect done.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.journeys.conftest import HOUSING, JOURNEYS, cells, cli, lab_notebook  # noqa: F401

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


def _killed_once_written(argv: list[str], log: Path, folder: Path) -> None:
    """Start ``argv`` in ``folder`` and kill it, kernel and all, as ``kill -9`` does, once
    ``log`` exists (the export's side effect is done and its cell still runs)."""
    with (folder / "run.log").open("wb") as out:
        process = subprocess.Popen(
            argv, cwd=folder, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            _wait_for(log, process)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


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
    _killed_once_written(argv, log, tmp_path)
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


def _next_command(output: str) -> list[str]:
    """The arguments of the ``next: notebook-bcc ...`` line a command printed (``run`` and
    ``resume`` print it on stderr), as a user copies it (the note in parentheses left out)."""
    lines = [line for line in output.splitlines() if line.startswith("next: notebook-bcc ")]
    assert len(lines) == 1, output
    return shlex.split(lines[0].removeprefix("next: notebook-bcc ").split("   (")[0])


def test_an_unattended_run_killed_mid_export_stays_unattended_on_the_printed_way_back(
    tmp_path: Path,
    lab_notebook: Path,  # noqa: F811
) -> None:
    """``run --auto-confirm``, killed while the irreversible export runs, with a stage review
    after it. The user types what ``status`` prints, then what ``resume`` prints, answering
    "it ran" (``--reject``) where it says ``--approve (or --reject)``: the review after the
    export is auto-confirmed as the run was started, the run completes, the export ran once."""
    db = tmp_path / "state.sqlite"
    log = lab_notebook.parent / "exports.log"
    argv = [sys.executable, "-m", "notebook_bcc", "run", str(JOURNEYS / "unattended_review.yaml")]
    argv += ["--auto-confirm", "--notebook", str(lab_notebook), "--state-db", str(db)]
    _killed_once_written(argv, log, tmp_path)
    (lab_notebook.parent / "export.gate").touch()

    told = cli("status", "--state-db", db)
    typed = _next_command(told.stdout + told.stderr)
    assert "--auto-confirm" in typed, typed
    asked = cli(*typed)
    assert asked.returncode == 3, asked.stdout + asked.stderr
    assert "in_doubt" in asked.stdout, asked.stdout
    answer = _next_command(asked.stdout + asked.stderr)
    assert "--approve" in answer, answer
    assert "--auto-confirm" in answer, answer
    settled = cli(*[("--reject" if word == "--approve" else word) for word in answer])
    assert settled.returncode == 0, settled.stdout + settled.stderr
    assert log.read_text() == "exported\n", "the export ran once"
    status = json.loads(cli("status", "--state-db", db, "--json").stdout)
    assert status["run"]["status"] == "completed", status["run"]
    printed = "".join(
        "".join(o.get("text", "")) for c in cells(lab_notebook) for o in c.get("outputs", [])
    )
    assert "report 42" in printed
