"""``notebook-bcc validate``: exit codes and ``FILE:LINE: message`` output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from notebook_bcc.cli import main
from tests.conftest import FIXTURES

BLUEPRINTS = FIXTURES / "blueprints"


def test_valid_blueprint_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(BLUEPRINTS / "housing.yaml")
    assert main(["validate", path]) == 0
    out, err = capsys.readouterr()
    assert out.strip().startswith(f"{path}: valid blueprint 'housing': 5 stages")
    # the fixture declares its data file without shipping it: a warning, not an error
    assert err == (
        f"{path}:7: warning: files[0]: housing.csv does not exist here "
        "(run refuses a missing input file)\n"
    )


def test_warnings_go_to_stderr_and_still_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(BLUEPRINTS / "seed004.yaml")
    assert main(["validate", path]) == 0
    out, err = capsys.readouterr()
    assert f"{path}:17: warning: state 'done' is unreachable" in err
    assert "valid state machine 'orchestrate'" in out


def test_errors_exit_2_with_file_line_messages(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(BLUEPRINTS / "bad_rules.yaml")
    assert main(["validate", path]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    lines = err.splitlines()
    assert lines[0] == (
        f"{path}:13: transitions[1] (nowhere --success--> b): from 'nowhere' is not a state"
    )
    assert any(line.startswith(f"{path}:17: transitions[2].on:") for line in lines)
    assert len(lines) == 4


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = str(tmp_path / "nope.yaml")
    assert main(["validate", path]) == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"{path}: cannot read the file")
    assert "Traceback" not in err


def test_syntax_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(BLUEPRINTS / "bad_syntax.yaml")
    assert main(["validate", path]) == 2
    _, err = capsys.readouterr()
    assert err.startswith(f"{path}:3: YAML syntax")


def test_subprocess_round_trip() -> None:
    ok = subprocess.run(
        [sys.executable, "-m", "notebook_bcc", "validate", str(BLUEPRINTS / "housing.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ok.returncode == 0, ok.stderr
    assert "valid blueprint 'housing'" in ok.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "notebook_bcc", "validate", str(BLUEPRINTS / "bad_structure.yaml")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert bad.returncode == 2
    assert "bad_structure.yaml:4: states.load: unknown key 'titel'" in bad.stderr
