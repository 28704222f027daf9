"""One workflow store per server root (notebook_bcc/server/store_place.py).

The journey: two projects, two ``jupyter server`` processes for one user (one data dir).
The first is killed mid-run; the second, started in another folder that has a notebook of
the same name (JupyterLab names every new one ``Untitled.ipynb``), must neither list nor
resume the first one's workflow into its own notebook. The first, started again, does.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest

from notebook_bcc.server.store_place import (
    StoreOfAnotherRootError,
    claim_store,
    default_store_path,
    legacy_store,
    recorded_root,
    root_file,
)
from notebook_bcc.store.errors import StoreUnavailableError
from tests.server.conftest import SERVER_FIXTURES, read_notebook
from tests.server.test_restart import JupyterServer

NOTEBOOK = "Untitled.ipynb"


def test_each_root_has_a_store_of_its_own_and_a_symlinked_spelling_is_the_same_root(
    tmp_path: Path,
) -> None:
    one, two = tmp_path / "a" / "project", tmp_path / "b" / "project"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    (tmp_path / "link").symlink_to(one)
    data = tmp_path / "data"
    first, second = default_store_path(data, one), default_store_path(data, two)
    assert first != second, "two folders of the same name keep apart"
    assert first.parent.parent == data / "notebook_bcc" / "roots"
    assert first.parent.name.startswith("project-")
    assert first.name == "workflows.sqlite"
    assert default_store_path(data, tmp_path / "link") == first


def test_a_store_is_claimed_by_its_first_root_and_refused_to_another(tmp_path: Path) -> None:
    store = tmp_path / "state" / "workflows.sqlite"
    mine, other = tmp_path / "mine", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    claim_store(store, mine)
    assert recorded_root(store) == str(mine.resolve())
    claim_store(store, mine)  # the same root again: fine
    before = root_file(store).read_bytes()
    with pytest.raises(StoreOfAnotherRootError) as refused:
        claim_store(store, other)
    assert refused.value.details == {
        "path": str(store),
        "store_root": str(mine.resolve()),
        "server_root": str(other.resolve()),
    }
    assert str(root_file(store)) in refused.value.message, "says how to adopt it"
    assert root_file(store).read_bytes() == before, "nothing written"


@pytest.mark.parametrize(
    "content", [b"{not json", b'{"root": 3}', b"[]", b" " * (64 * 1024 + 1)], ids=str
)
def test_an_unreadable_root_file_is_a_typed_refusal(tmp_path: Path, content: bytes) -> None:
    store = tmp_path / "workflows.sqlite"
    root_file(store).write_bytes(content)
    with pytest.raises(StoreUnavailableError) as refused:
        claim_store(store, tmp_path)
    assert str(root_file(store)) in refused.value.message
    assert root_file(store).read_bytes() == content


def _project(folder: Path, text: str) -> Path:
    """A server root with the test blueprints and a notebook the user wrote."""
    shutil.copytree(SERVER_FIXTURES, folder / "blueprints")
    notebook = nbformat.v4.new_notebook()
    notebook.cells.append(nbformat.v4.new_code_cell(text))
    nbformat.write(notebook, folder / NOTEBOOK)
    return folder / NOTEBOOK


def _two_projects(tmp_path: Path, text_b: str) -> tuple[Path, Path, Path]:
    """One user's Jupyter home and two project folders: ``(home, a, b)``."""
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    _project(project_a, "# the first project's notebook")
    _project(project_b, text_b)
    return home, project_a, project_b


def _stop(server: JupyterServer, *, kill: bool = False) -> None:
    if kill:
        server.process.kill()
    else:
        server.process.terminate()
    server.process.wait(timeout=60)
    server.log.close()


def test_a_server_in_another_folder_neither_lists_nor_resumes_the_first_ones_workflow(
    tmp_path: Path,
) -> None:
    home, project_a, project_b = _two_projects(tmp_path, "users_own_work = 42")
    mine = project_b / NOTEBOOK
    untouched = mine.read_bytes()

    first = JupyterServer(project_a, home, name="first")
    try:
        first.wait_ready()
        workflow_id = first.start(NOTEBOOK, "blueprints/slow.yaml")["workflow_id"]
        first.wait(workflow_id, lambda s: s["notebook"]["execution_count"] >= 1)
    finally:
        _stop(first, kill=True)  # mid-run: the workflow stays active in its store

    second = JupyterServer(project_b, home, name="second")
    try:
        second.wait_ready()
        code, listing = second.api("GET", "workflows")
        assert code == 200, listing
        assert listing["workflows"] == [], "the other project's workflow is not listed"
        code, body = second.api("GET", f"workflows/{workflow_id}")
        assert (code, body["code"]) == (404, "not_found"), body
    finally:
        _stop(second)
    assert mine.read_bytes() == untouched, "nothing was resumed into this project's notebook"

    again = JupyterServer(project_a, home, name="again")
    try:
        again.wait_ready()
        again.wait_live(workflow_id)
        done = again.wait_status(workflow_id, "completed", "failed", "paused")
        assert done["run"]["status"] == "completed", done["run"]
    finally:
        _stop(again)
    sources = ["".join(c["source"]) for c in read_notebook(project_a / NOTEBOOK)["cells"]]
    assert any("finished = time.time()" in s for s in sources), sources


def test_a_configured_store_of_another_root_is_refused_with_a_503_that_says_why(
    tmp_path: Path,
) -> None:
    home, project_a, project_b = _two_projects(tmp_path, "# b")
    store = tmp_path / "shared.sqlite"
    setting = f"--NotebookBccApp.store_path={store}"

    first = JupyterServer(project_a, home, setting, name="first")
    try:
        first.wait_ready()
        assert first.api("GET", "workflows")[0] == 200
    finally:
        _stop(first)
    claimed = root_file(store).read_bytes()
    assert json.loads(claimed) == {"root": os.path.realpath(project_a)}

    second = JupyterServer(project_b, home, setting, name="second")
    try:
        second.wait_ready()
        code, body = second.api("GET", "workflows")
        assert (code, body["code"]) == (503, "store_of_another_root"), body
        assert body["details"]["store_root"] == os.path.realpath(project_a)
        assert body["details"]["server_root"] == os.path.realpath(project_b)
        code, body = second.api(
            "POST",
            "workflows",
            {"notebook_path": NOTEBOOK, "planner": {"kind": "blueprint", "path": "x.yaml"}},
        )
        assert (code, body["code"]) == (503, "store_of_another_root"), body
    finally:
        _stop(second)
    log = second.log_path.read_text(errors="replace")
    assert "belongs to the server root" in log
    assert "Traceback" not in log, log[-3000:]
    assert root_file(store).read_bytes() == claimed


def test_the_store_every_root_shared_before_is_named_until_adopted_or_moved(
    tmp_path: Path,
) -> None:
    data, store = tmp_path / "data", tmp_path / "data" / "notebook_bcc" / "roots" / "p" / "w.db"
    legacy = data / "notebook_bcc" / "workflows.sqlite"
    assert legacy_store(data, store) is None  # a new user: nothing to name
    legacy.parent.mkdir(parents=True)
    legacy.write_bytes(b"")
    assert legacy_store(data, store) == legacy
    assert legacy_store(data, legacy) is None  # configured as this server's store
    claim_store(legacy, tmp_path / "project")
    assert legacy_store(data, store) is None  # adopted by a root: that root's store now


def test_an_upgraded_user_is_told_where_the_earlier_workflows_are_and_can_adopt_them(
    tmp_path: Path,
) -> None:
    """Before stores were kept per root, every server of a user shared
    ``<data_dir>/notebook_bcc/workflows.sqlite``. After the upgrade the panel lists nothing
    and the workflows are not resumed; the log names that store and the setting that adopts
    it, and with that setting the workflow is there again."""
    home = tmp_path / "home"
    (home / "config").mkdir(parents=True)
    project = tmp_path / "project"
    _project(project, "# the user's notebook")
    legacy = home / "data" / "notebook_bcc" / "workflows.sqlite"
    adopt = f"--NotebookBccApp.store_path={legacy}"

    before = JupyterServer(project, home, adopt, name="before")
    try:
        before.wait_ready()
        workflow_id = before.start(NOTEBOOK, "blueprints/quick.yaml")["workflow_id"]
        assert before.wait_status(workflow_id, "completed", "failed")["run"]["status"] == (
            "completed"
        )
    finally:
        _stop(before)
    root_file(legacy).unlink()  # the earlier version recorded no root

    upgraded = JupyterServer(project, home, name="upgraded")
    try:
        upgraded.wait_ready()
        code, listing = upgraded.api("GET", "workflows")
        assert code == 200, listing
        assert listing["workflows"] == []
    finally:
        _stop(upgraded)
    log = upgraded.log_path.read_text(errors="replace")
    assert f"kept the workflows of every server root in {legacy}" in log, log[-3000:]
    assert adopt in log

    adopted = JupyterServer(project, home, adopt, name="adopted")
    try:
        adopted.wait_ready()
        code, listing = adopted.api("GET", "workflows")
        assert code == 200, listing
        assert [w["workflow_id"] for w in listing["workflows"]] == [workflow_id]
    finally:
        _stop(adopted)
    assert "kept the workflows of every server root" not in adopted.log_path.read_text(
        errors="replace"
    )
