"""A notebook renamed or deleted in a terminal (outside Jupyter) while its workflow waits, on a
real ``jupyter server`` process with collaboration (and the fileid extension) switched off:
the workflow follows its notebook by file id the next time it is looked up or writes, and a
new notebook created under the old name inherits nothing."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import requires
from tests.server.conftest import SERVER_FIXTURES, read_notebook
from tests.server.test_restart import JUPYTER_SERVER, JupyterServer

pytestmark = [
    requires(JUPYTER_SERVER.exists(), "jupyter-server not found"),
    pytest.mark.timeout(300),
]

EMPTY_NOTEBOOK = {
    "cells": [],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


def _sources(path: Path) -> list[str]:
    return ["".join(cell["source"]) for cell in read_notebook(path)["cells"]]


def _waiting(server: JupyterServer, notebook: str) -> dict[str, Any]:
    """A confirm.yaml workflow on ``notebook`` waiting for its stage confirmation, its cell
    written to the file."""
    started = server.start(notebook, "blueprints/confirm.yaml", options={"auto_confirm": False})
    snapshot = server.wait(started["workflow_id"], lambda s: bool(s["run"]["pending"]))
    assert snapshot["run"]["status"] == "waiting", snapshot["run"]
    return snapshot


def _listed(server: JupyterServer, notebook: str) -> list[dict[str, Any]]:
    code, listing = server.api("GET", f"workflows?notebook_path={notebook}")
    assert code == 200, listing
    return [w for w in listing["workflows"] if w["notebook_path"] == notebook]


def test_a_terminal_mv_is_followed_and_rm_pauses_the_run(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(SERVER_FIXTURES, root / "blueprints")
    (root / "work").mkdir()
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    server = JupyterServer(root, home, f"--NotebookBccApp.store_path={tmp_path / 'store.sqlite'}")
    try:
        server.wait_ready()
        moved = _waiting(server, "work/a.ipynb")
        deleted = _waiting(server, "work/c.ipynb")
        deadline = time.monotonic() + 30
        # both notebooks on disk with their cells (and so their file ids recorded), as a
        # person sees them before typing mv / rm
        while not all(
            "reviewed = True" in _sources(root / "work" / name) for name in ("a.ipynb", "c.ipynb")
        ):
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.1)

        # a terminal: mv a b; rm c; then the user creates a new a.ipynb in Jupyter
        os.rename(root / "work" / "a.ipynb", root / "work" / "b.ipynb")
        os.remove(root / "work" / "c.ipynb")
        code, body = server.request(
            "PUT",
            "api/contents/work/a.ipynb",
            {"type": "notebook", "format": "json", "content": EMPTY_NOTEBOOK},
        )
        assert code == 201, body

        # looked up under the old name: nothing there any more
        assert _listed(server, "work/a.ipynb") == []
        followed = server.snapshot(moved["workflow_id"])
        assert followed["notebook_path"] == "work/b.ipynb"
        assert [w["workflow_id"] for w in _listed(server, "work/b.ipynb")] == [moved["workflow_id"]]
        paused = server.wait_status(deleted["workflow_id"], "paused")
        assert "was deleted" in paused["run"]["reason"], paused["run"]
        assert _listed(server, "work/c.ipynb") == []

        # approving the moved workflow writes into b.ipynb; the new a.ipynb stays empty
        pending = followed["run"]["pending"][0]
        code, body = server.command(
            moved["workflow_id"],
            decide=pending["id"],
            decision="approve",
            expected_version=followed["version"],
        )
        assert code == 200, body
        done = server.wait_status(moved["workflow_id"], "completed")
        assert done["notebook_path"] == "work/b.ipynb"
        deadline = time.monotonic() + 30
        while "after = True" not in _sources(root / "work" / "b.ipynb"):
            assert time.monotonic() < deadline, server.tail()
            time.sleep(0.1)
        assert _sources(root / "work" / "a.ipynb") == []
        # the old name is free: a workflow starts there
        fresh = server.start("work/a.ipynb", "blueprints/quick.yaml")
        assert fresh["workflow_id"] not in (moved["workflow_id"], deleted["workflow_id"])
        server.wait_status(fresh["workflow_id"], "completed")
    finally:
        server.stop()
