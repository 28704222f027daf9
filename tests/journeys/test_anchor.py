"""The chain heads mirrored in the notebook catch rows cut from the end of the database."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

from tests.journeys.conftest import JOURNEYS, cli


def test_the_notebook_carries_the_anchor_that_catches_a_rewritten_tail(tmp_path: Path) -> None:
    (tmp_path / "fixed.flag").touch()
    db = tmp_path / "state.sqlite"
    notebook = tmp_path / "nb.ipynb"
    done = cli("run", JOURNEYS / "failing.yaml", "--notebook", notebook, "--state-db", db)
    assert done.returncode == 0, done.stderr
    mirrored = json.loads(notebook.read_text(encoding="utf-8"))["metadata"]["notebook_bcc"][
        "anchor"
    ]
    exported = tmp_path / "exported.json"
    assert cli("trace", "--state-db", db, "--export-anchor", exported).returncode == 0
    heads = {key: value for key, value in mirrored.items() if key != "workflow_id"}
    assert heads == json.loads(exported.read_text(encoding="utf-8")), (
        "the last flush mirrors the final chain heads"
    )
    with contextlib.closing(sqlite3.connect(db)) as conn:
        assert [mirrored["workflow_id"]] == [
            r[0] for r in conn.execute("SELECT workflow_id FROM workflows")
        ]
    anchor = tmp_path / "from-notebook.json"
    anchor.write_text(json.dumps(mirrored), encoding="utf-8")
    assert cli("trace", "--state-db", db, "--verify", "--anchor", anchor).returncode == 0
    with contextlib.closing(sqlite3.connect(db)) as conn:  # cut 2 rows, rewrite the head
        conn.execute("DELETE FROM events WHERE seq > (SELECT MAX(seq) - 2 FROM events)")
        conn.execute(
            "UPDATE chain_heads SET rows = rows - 2, last_seq = last_seq - 2,"
            " head_hash = (SELECT hash FROM events ORDER BY seq DESC LIMIT 1)"
            " WHERE chain = 'events'"
        )
        conn.commit()
    refused = cli("trace", "--state-db", db, "--verify", "--anchor", anchor)
    assert refused.returncode == 1
    assert "events: the anchor records" in refused.stderr
    # the notebook itself is an anchor too, as it is (no need to cut its metadata out)
    by_notebook = cli("trace", "--state-db", db, "--verify", "--anchor", notebook)
    assert by_notebook.returncode == 1
    assert "events: the anchor records" in by_notebook.stderr


def test_a_notebook_without_an_anchor_is_named_as_such(tmp_path: Path) -> None:
    (tmp_path / "fixed.flag").touch()
    db = tmp_path / "state.sqlite"
    done = cli(
        "run", JOURNEYS / "failing.yaml", "--notebook", tmp_path / "nb.ipynb", "--state-db", db
    )
    assert done.returncode == 0, done.stderr
    plain = tmp_path / "plain.ipynb"
    plain.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    refused = cli("trace", "--state-db", db, "--verify", "--anchor", plain)
    assert refused.returncode == 2
    assert "is a notebook without an anchor" in refused.stderr
