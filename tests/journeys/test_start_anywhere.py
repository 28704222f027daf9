"""Journey 1: start a workflow on any notebook — Lab's blank cell, the user's own cells."""

from __future__ import annotations

from pathlib import Path

from tests.journeys.conftest import HOUSING, JOURNEYS, cells, cli, sources

INPUTS_TAG = "notebook-bcc-inputs"


def test_a_notebook_jupyterlab_created_runs_to_the_end(lab_notebook: Path, tmp_path: Path) -> None:
    done = cli(
        "run",
        HOUSING,
        "--auto-confirm",
        "--notebook",
        lab_notebook,
        "--state-db",
        tmp_path / "state.sqlite",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    written = cells(lab_notebook)
    first = written[0]
    assert first["metadata"]["tags"] == [INPUTS_TAG], "the inputs cell takes Lab's blank cell"
    assert "5f0c7a52-0b1e-4c6e-9d7e-2a8f3b1c9e41" not in [c["id"] for c in written]
    source = "".join(first["source"])
    assert "user_submit_files = [" in source
    # relative to the notebook's folder: the notebook runs wherever the folder is copied
    expected = Path(HOUSING / "data" / "housing.csv").resolve()
    relative = Path(source.split("user_submit_files = ['")[1].split("'")[0])
    assert not relative.is_absolute()
    assert (lab_notebook.parent / relative).resolve() == expected
    assert all(s.strip() for s in sources(lab_notebook)), "no blank cell left behind"


def test_the_users_cells_stay_first_and_unexecuted(tmp_path: Path) -> None:
    notebook = tmp_path / "mine.ipynb"
    notebook.write_text((JOURNEYS / "user_cells.ipynb").read_text(encoding="utf-8"))
    done = cli(
        "run",
        JOURNEYS / "failing.yaml",
        "--auto-confirm",
        "--notebook",
        notebook,
        "--state-db",
        tmp_path / "state.sqlite",
    )
    assert done.returncode == 1, "the fixture's second stage fails without its flag file"
    written = cells(notebook)
    assert [c["id"] for c in written[:2]] == [
        "a1b2c3d4-0000-4000-8000-000000000001",
        "a1b2c3d4-0000-4000-8000-000000000002",
    ]
    assert written[1]["execution_count"] is None, "a user cell is never executed (D19)"
    assert written[2]["metadata"]["tags"] == [INPUTS_TAG]
    assert "numbers = [1, 2, 3]" in "".join(sources(notebook))
