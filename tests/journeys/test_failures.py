"""Journey 3 and 5: a failure says where and why, and is retried or restarted."""

from __future__ import annotations

import json
from pathlib import Path

from tests.journeys.conftest import JOURNEYS, cli

FAILING = JOURNEYS / "failing.yaml"


def _status(db: Path) -> dict[str, object]:
    done = cli("status", "--state-db", db, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, object] = json.loads(done.stdout)
    return data


def test_the_failure_names_the_cell_and_a_retry_goes_on(lab_notebook: Path, tmp_path: Path) -> None:
    db = tmp_path / "state.sqlite"
    failed = cli("run", FAILING, "--notebook", lab_notebook, "--state-db", db)
    assert failed.returncode == 1
    summary = failed.stdout + failed.stderr
    assert "model / fit / train" in summary
    assert "TypeError: unsupported operand type(s) for +: 'int' and 'str'" in summary
    assert "line 4 of cell" in summary
    text = cli("status", "--state-db", db).stdout
    assert "TypeError" in text
    assert "model / fit / train" in text
    (tmp_path / "fixed.flag").touch()
    retried = cli("resume", "--state-db", db)
    assert retried.returncode == 0, retried.stdout + retried.stderr
    snapshot = _status(db)
    assert snapshot["fsm"]["state"] == "workflow_completed"  # type: ignore[index]
    assert snapshot["stage_machine"]["visits"]["model"] == 2  # type: ignore[index]


def test_restart_after_a_failure_starts_a_new_run_in_a_fresh_kernel(tmp_path: Path) -> None:
    # the first stage counts its runs in the kernel: a restart that rebuilt the failed
    # attempt's state into the new kernel would make the new run's first stage say "2"
    counting = JOURNEYS / "failing_counting.yaml"
    db = tmp_path / "state.sqlite"
    notebook = tmp_path / "nb.ipynb"
    failed = cli("run", counting, "--notebook", notebook, "--state-db", db)
    assert failed.returncode == 1
    before = _status(db)["run_id"]
    (tmp_path / "fixed.flag").touch()
    restarted = cli("resume", "--state-db", db, "--restart")
    assert restarted.returncode == 0, restarted.stdout + restarted.stderr
    after = _status(db)
    assert after["run_id"] != before
    assert after["stage_machine"]["visits"]["prepare"] == 2  # type: ignore[index]
    said = [
        "".join(output.get("text", ""))
        for cell in json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        for output in cell.get("outputs", [])
        if "prepare run" in "".join(output.get("text", ""))
    ]
    assert said == ["prepare run 1\n", "prepare run 1\n"], said

    # a bare resume of the finished run: nothing runs, nothing is recorded, and the
    # notebook (written again from the store) holds the same cells
    written = [
        (c["id"], c["source"], c.get("outputs")) for c in json.loads(notebook.read_text())["cells"]
    ]
    again = cli("resume", "--state-db", db)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "is completed: nothing to resume" in again.stdout
    assert "replayed" not in again.stdout + again.stderr, "no kernel was started"
    assert _status(db)["version"] == after["version"]
    cells = json.loads(notebook.read_text())["cells"]
    assert [(c["id"], c["source"], c.get("outputs")) for c in cells] == written


def test_validate_reports_python_syntax_errors_at_their_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "name: bad\n"
        "states:\n"
        "  one:\n"
        "    acceptance: ['x >']\n"
        "    steps:\n"
        "      - id: s\n"
        "        behaviors:\n"
        "          - id: b\n"
        "            actions:\n"
        "              - code: |\n"
        "                  x = 1\n"
        "                  if x\n"
        "                      print(x)\n"
        "transitions: []\n",
        encoding="utf-8",
    )
    done = cli("validate", bad)
    assert done.returncode == 2
    lines = done.stderr.splitlines() + done.stdout.splitlines()
    assert f"{bad}:4: stage one acceptance[0]: Python syntax error: invalid syntax: x >" in lines
    assert f"{bad}:12: one/s/b actions[0]: Python syntax error: expected ':': if x" in lines
    refused = cli("run", bad, "--notebook", tmp_path / "nb.ipynb")
    assert refused.returncode == 2
    assert not (tmp_path / "nb.ipynb").exists()
