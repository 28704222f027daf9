"""``python -m notebook_bcc.testing.scripted_dslc``: the README's DSLC journey, walkable with no
DSLC server at hand, run as a user runs it (two processes on loopback)."""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURES, StdoutWatch
from tests.conftest import run_cli as cli

DSLC = FIXTURES / "dslc"


def _serve(folder: Path) -> tuple[subprocess.Popen[str], StdoutWatch]:
    server = subprocess.Popen(
        [sys.executable, "-m", "notebook_bcc.testing.scripted_dslc", str(folder)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    said = StdoutWatch(server, "URL http://127.0.0.1:")
    assert said.seen.wait(60), "the scripted server never said where it listens"
    return server, said


def _stop(server: subprocess.Popen[str]) -> str:
    server.send_signal(signal.SIGTERM)
    _, err = server.communicate(timeout=30)
    return err


def _url(said: StdoutWatch) -> str:
    return said.lines[0].rsplit("URL ", 1)[1].strip()


def test_the_readme_dslc_run_against_the_scripted_server(tmp_path: Path) -> None:
    server, said = _serve(DSLC)
    try:
        done = cli(
            "run",
            "--planner",
            "http",
            "--planner-url",
            _url(said),
            "--problem",
            "Describe the house prices",
            "--file",
            DSLC / "prices.csv",
            "--notebook",
            tmp_path / "dslc.ipynb",
        )
    finally:
        err = _stop(server)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stages: 2/2 completed" in done.stdout
    assert server.returncode == 0, err
    served = re.search(r"scripted DSLC: served (\d+) request\(s\); 0 had no payload", err)
    assert served is not None, err
    assert int(served.group(1)) >= 11, "every planner call was answered from the folder"


def test_a_request_the_script_does_not_cover_fails_the_run_naming_the_file(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "script"
    folder.mkdir()
    shutil.copy(DSLC / "planning.IDLE.xml", folder)
    server, said = _serve(folder)
    try:
        done = cli(
            "run",
            "--planner",
            "http",
            "--planner-url",
            _url(said),
            "--problem",
            "p",
            "--notebook",
            tmp_path / "nb.ipynb",
        )
    finally:
        err = _stop(server)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no script for planning.STAGE_RUNNING.explore" in done.stdout + done.stderr
    assert server.returncode == 1
    assert "1 had no payload (first planning.STAGE_RUNNING.explore)" in err


def test_a_folder_without_payloads_is_exit_2(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "notebook_bcc.testing.scripted_dslc", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "no payload files" in done.stderr
