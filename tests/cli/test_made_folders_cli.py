"""A ``notebook-bcc run`` that refuses to start leaves the file system as it found it: the
empty folders it made on its way (the notebook's, the state database's, ``--record DIR``) are
removed again; a folder that existed before, or that holds anything, is kept."""

from __future__ import annotations

from pathlib import Path

from tests.cli.conftest import alter_history_row, copy_state_db
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli

CHAIN = FIXTURES / "engine" / "chain.yaml"
CONFIRM = FIXTURES / "engine" / "confirm.yaml"


def tree(root: Path) -> list[str]:
    """Every path under ``root``, relative, sorted (folders included)."""
    return sorted(str(path.relative_to(root)) for path in root.rglob("*"))


def test_a_missing_input_file_leaves_no_record_folder(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "notes.txt").write_text("mine")
    before = tree(tmp_path)
    done = cli(
        *("run", CHAIN, "--file", "missing.csv", "--record", "runs/new/rec"),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "input file(s) not found" in done.stderr
    assert tree(tmp_path) == before  # runs/ and its file kept, runs/new/rec gone


def test_a_state_db_that_is_a_folder_leaves_no_notebook_folder(tmp_path: Path) -> None:
    (tmp_path / "dbdir").mkdir()
    (tmp_path / "kept").mkdir()  # empty, but there before: never removed
    before = tree(tmp_path)
    done = cli(
        *("run", CHAIN, "--notebook", "kept/new/deeper/nb.ipynb", "--state-db", "dbdir"),
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "dbdir is a directory, not a state database" in done.stderr
    assert tree(tmp_path) == before


def test_an_altered_store_leaves_no_record_folder(completed_state_db: Path, tmp_path: Path) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    alter_history_row(db)
    before = tree(tmp_path)
    done = cli(
        *("run", CHAIN, "--notebook", "out/nb.ipynb", "--state-db", db.name),
        *("--record", "rec"),
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "was altered after it was written, so run will not write to it" in done.stderr
    assert tree(tmp_path) == before


def test_an_unfinished_run_in_a_shared_store_leaves_no_output_folder(tmp_path: Path) -> None:
    """The notebook's folder was deleted, its unfinished run is still in a state database kept
    elsewhere: the same command is refused (resume it or --abandon), with no folder left."""
    args = ("run", CONFIRM, "--notebook", "out/confirm/nb.ipynb", "--state-db", "shared.sqlite")
    assert cli(*args, cwd=tmp_path).returncode == 3  # waits on its stage confirmation
    for path in sorted((tmp_path / "out").rglob("*"), reverse=True):
        path.rmdir() if path.is_dir() else path.unlink()
    (tmp_path / "out").rmdir()
    before = tree(tmp_path)
    done = cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "notebook-bcc resume --state-db shared.sqlite" in done.stderr
    assert tree(tmp_path) == before
    assert not (tmp_path / "out").exists()
