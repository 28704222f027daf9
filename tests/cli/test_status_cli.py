"""``notebook-bcc status --json`` says what the text status says about the store's integrity:
the snapshot's keys as they were, plus ``store_integrity``."""

from __future__ import annotations

import json
from pathlib import Path

from notebook_bcc.store.sqlite import SqliteStore
from tests.cli.conftest import alter_history_row, copy_state_db
from tests.conftest import run_cli as cli


def _stored(db: Path) -> dict[str, object]:
    store = SqliteStore(db, existing=True)
    try:
        (workflow_id,) = store.workflow_ids()
        snapshot: dict[str, object] = store.load(workflow_id).model_dump(mode="json", by_alias=True)
        return snapshot
    finally:
        store.close()


def test_status_json_of_an_intact_store_says_it_was_not_altered(
    completed_state_db: Path, tmp_path: Path
) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    done = cli("status", "--state-db", db, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data.pop("store_integrity") == {"altered": False, "problem": None}
    assert data == _stored(db)  # every other key as before


def test_status_json_of_an_altered_store_says_so_as_the_text_does(
    completed_state_db: Path, tmp_path: Path
) -> None:
    db = copy_state_db(completed_state_db, tmp_path)
    alter_history_row(db, seq=3)
    done = cli("status", "--state-db", db, "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    data = json.loads(done.stdout)
    integrity = data.pop("store_integrity")
    assert integrity["altered"] is True
    assert integrity["problem"]["code"] == "chain_broken"
    assert integrity["problem"]["details"] == {"table": "history", "seq": 3}
    assert data == _stored(db)
    text = cli("status", "--state-db", db)
    assert text.returncode == 1
    assert f"warning: {db} was altered after it was written: " in text.stdout
    assert integrity["problem"]["message"] in text.stdout
