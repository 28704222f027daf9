"""Journey 4: the same command run again, as CI re-runs a job."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.journeys.conftest import JOURNEYS, cli, sources

FAILING = JOURNEYS / "failing.yaml"


def _workflows(db: Path) -> list[tuple[str, int]]:
    with sqlite3.connect(db) as conn:
        return list(conn.execute("SELECT run_status, active FROM workflows ORDER BY created_at"))


def test_rerun_overwrites_the_notebook_and_keeps_the_record(tmp_path: Path) -> None:
    (tmp_path / "fixed.flag").touch()
    args = [
        "run",
        FAILING,
        "--auto-confirm",
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
    ]
    assert cli(*args).returncode == 0
    once = sources(tmp_path / "nb.ipynb")
    again = cli(*args)
    assert again.returncode == 0, again.stderr
    assert sources(tmp_path / "nb.ipynb") == once, "exactly the new run, not two"
    assert _workflows(tmp_path / "state.sqlite") == [("completed", 0), ("completed", 0)]


def test_a_failed_run_is_archived_by_the_next(tmp_path: Path) -> None:
    args = [
        "run",
        FAILING,
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
    ]
    assert cli(*args).returncode == 1
    (tmp_path / "fixed.flag").touch()
    assert cli(*args).returncode == 0
    assert _workflows(tmp_path / "state.sqlite") == [("failed", 0), ("completed", 0)]


def test_an_unfinished_run_is_refused_with_the_resume_command(tmp_path: Path) -> None:
    blueprint = JOURNEYS.parent / "engine" / "confirm.yaml"
    args = [
        "run",
        blueprint,
        "--notebook",
        tmp_path / "nb.ipynb",
        "--state-db",
        tmp_path / "state.sqlite",
    ]
    assert cli(*args).returncode == 3
    refused = cli(*args)
    assert refused.returncode == 2
    assert f"notebook-bcc resume --state-db {tmp_path / 'state.sqlite'} --workflow wf-" in (
        refused.stderr
    )
    abandoned = cli(*args, "--auto-confirm", "--abandon")
    assert abandoned.returncode == 0, abandoned.stderr
    assert _workflows(tmp_path / "state.sqlite") == [("cancelled", 0), ("completed", 0)]
