"""Journey 2: decisions answered one at a time, each in a new process, as the README shows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.journeys.conftest import HOUSING, cli, sources


@pytest.mark.timeout(900)  # five housing runs as separate processes
def test_one_at_a_time_gives_the_auto_confirm_notebook(tmp_path: Path) -> None:
    step = tmp_path / "step"
    auto = tmp_path / "auto"
    db = step / "state.sqlite"
    first = cli("run", HOUSING, "--notebook", step / "h.ipynb", "--state-db", db)
    assert first.returncode == 3, first.stderr
    kinds = []
    for _ in range(6):
        answered = cli("resume", "--state-db", db, "--approve")
        assert "kernel_rebuild" not in answered.stdout + answered.stderr, (
            "a new process restores its kernel by itself"
        )
        kinds.append(answered.returncode)
        if answered.returncode != 3:
            break
    assert kinds == [3, 3, 0], kinds
    done = cli(
        "run",
        HOUSING,
        "--auto-confirm",
        "--notebook",
        auto / "h.ipynb",
        "--state-db",
        auto / "state.sqlite",
    )
    assert done.returncode == 0, done.stderr
    assert sources(step / "h.ipynb") == sources(auto / "h.ipynb")


@pytest.mark.timeout(900)  # five housing runs as separate processes
def test_a_failed_replay_asks_and_names_the_cell(tmp_path: Path) -> None:
    work = tmp_path / "housing"
    shutil.copytree(HOUSING, work)
    db = tmp_path / "state.sqlite"
    first = cli("run", work, "--notebook", tmp_path / "h.ipynb", "--state-db", db)
    assert first.returncode == 3, first.stderr
    (work / "data" / "housing.csv").unlink()  # the data is gone: replaying the load fails
    answered = cli("resume", "--state-db", db, "--approve")
    assert answered.returncode == 3, answered.stdout + answered.stderr
    status = cli("status", "--state-db", db)
    assert "kernel_rebuild" in status.stdout
    assert "FileNotFoundError" in status.stdout
    assert "answer kernel_rebuild-" in answered.stderr, "the decision waits for the kernel"
