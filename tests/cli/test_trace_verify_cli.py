"""``notebook-bcc trace --verify --json`` as a script runs it: one JSON document holding what
the verification found (the counts it checked, or the problem naming table and row), with
the exit codes of the text mode."""

from __future__ import annotations

import json
from pathlib import Path

from notebook_bcc.store.sqlite import SqliteStore
from tests.cli.conftest import alter_history_row, copy_state_db
from tests.conftest import FIXTURES
from tests.conftest import run_cli as cli


def test_verify_json_holds_every_count_the_verification_checked(
    completed_state_db: Path, tmp_path: Path
) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    done = cli("trace", "--state-db", db, "--verify", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    store = SqliteStore(db, existing=True)
    try:
        report = store.verification()
    finally:
        store.close()
    assert document == {
        "ok": True,
        "rows": report.total,
        "chains": report.rows,
        "tables": report.tables,
        "anchor": None,
        "problems": [],
    }
    assert report.total > 0
    assert report.tables
    text = cli("trace", "--state-db", db, "--verify")
    assert text.returncode == 0
    assert text.stdout.startswith(f"chain verified: {report.total} rows in ")


def test_verify_json_of_an_altered_store_names_the_row_and_exits_1(
    completed_state_db: Path, tmp_path: Path
) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    alter_history_row(db, seq=3)
    done = cli("trace", "--state-db", db, "--verify", "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    document = json.loads(done.stdout)
    (problem,) = document.pop("problems")
    assert document == {"ok": False, "rows": None, "chains": None, "tables": None, "anchor": None}
    assert problem["code"] == "chain_broken"
    assert problem["details"] == {"table": "history", "seq": 3}
    assert problem["message"].startswith("history row seq=3 does not match its hash chain")
    assert f"error: {problem['message']}" in done.stderr
    assert "Traceback" not in done.stderr


def test_verify_json_with_anchors_read_and_written(
    completed_state_db: Path, tmp_path: Path
) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    notebook = completed_state_db.with_name("chain.ipynb")
    exported = tmp_path / "kept" / "anchor.json"
    flags = ("--verify", "--anchor", notebook, "--export-anchor", exported, "--json")
    done = cli("trace", "--state-db", db, *flags)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["ok"] is True
    assert document["anchor"] == str(notebook)
    assert document["exported_anchor"] == str(exported)
    assert json.loads(exported.read_text())["format"] == "notebook-bcc-anchor"
    missing = tmp_path / "missing.json"
    unread = cli("trace", "--state-db", db, "--verify", "--anchor", missing, "--json")
    assert unread.returncode == 2, unread.stderr
    (problem,) = json.loads(unread.stdout)["problems"]
    assert problem["code"] == "anchor_unreadable"
    assert problem["message"].startswith(f"{missing}: cannot read the anchor")


def test_a_notebook_run_against_another_database_is_not_read_as_tampering(
    completed_state_db: Path, tmp_path: Path
) -> None:
    """The same blueprint run again with a state database of its own: the first notebook's
    anchor vouches for the first database only. Checked against the second, it is refused
    as another database's (exit 2), not reported as rows cut or rewritten (exit 1)."""
    first_notebook = completed_state_db.with_name("chain.ipynb")
    again = tmp_path / "again"
    done = cli(
        "run",
        FIXTURES / "engine" / "chain.yaml",
        *("--notebook", again / "chain.ipynb", "--auto-confirm"),
    )
    assert done.returncode == 0, done.stderr
    other_db = again / "state.sqlite"
    mine = cli("trace", "--state-db", other_db, "--verify", "--anchor", again / "chain.ipynb")
    assert mine.returncode == 0, mine.stderr
    assert "the anchored prefix" in mine.stdout

    foreign = cli("trace", "--state-db", other_db, "--verify", "--anchor", first_notebook, "--json")
    assert foreign.returncode == 2, foreign.stdout + foreign.stderr
    verdict = json.loads(foreign.stdout)
    assert verdict["ok"] is False
    (problem,) = verdict["problems"]
    assert problem["code"] == "anchor_of_another_database"
    assert "vouches for another database" in problem["message"]
    assert "deleted" not in foreign.stderr
    assert "rewritten" not in foreign.stderr
    own = cli("trace", "--state-db", completed_state_db, "--verify", "--anchor", first_notebook)
    assert own.returncode == 0, own.stderr
