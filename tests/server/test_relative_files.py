"""``files_relative_to: notebook`` (what the panel's start form sends): input files named from
the notebook's folder, still confined to the server root (``..``, absolute paths, symlinks),
errors naming API paths only; the default stays ``root`` (API paths)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import Api

BLUEPRINT = {"kind": "blueprint", "path": "blueprints/quick.yaml"}


def _body(files: list[str], **extra: Any) -> dict[str, Any]:
    return {
        "notebook_path": "proj/nb/a.ipynb",
        "planner": BLUEPRINT,
        "files": files,
        "files_relative_to": "notebook",
        **extra,
    }


@pytest.fixture
def project(root: Path) -> Path:
    folder = root / "proj" / "nb"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "train.csv").write_text("a\n1\n")
    (root / "proj" / "shared.csv").write_text("b\n2\n")
    return folder


async def test_notebook_relative_files_are_accepted_and_reach_the_kernel_relative(
    api: Api, project: Path
) -> None:
    code, snapshot = await api.call(
        "POST", "workflows", body=_body(["data/train.csv", "../shared.csv"])
    )
    assert code == 201, snapshot
    # the kernel runs in the notebook's folder: it sees the paths as the user typed them
    assert snapshot["files"] == ["data/train.csv", "../shared.csv"]
    await api.wait_status(snapshot["workflow_id"], "completed", "failed")


async def test_the_default_is_still_api_paths(api: Api, project: Path) -> None:
    body = _body(["data/train.csv"])
    del body["files_relative_to"]
    code, answer = await api.call("POST", "workflows", body=body)
    assert code == 400, answer
    assert answer["details"] == {"field": "files", "missing": ["data/train.csv"]}


async def test_a_missing_relative_file_is_named_by_its_api_path(
    api: Api, project: Path, root: Path
) -> None:
    code, answer = await api.call("POST", "workflows", body=_body(["data/none.csv"]))
    assert code == 400, answer
    assert answer["details"] == {"field": "files", "missing": ["proj/nb/data/none.csv"]}
    assert answer["message"] == (
        "input files not found: files[0]: no such file 'data/none.csv' (looked for "
        "'proj/nb/data/none.csv'); paths here are relative to the notebook's folder 'proj/nb'"
    )
    assert str(root) not in answer["message"]
    assert not (project / "a.ipynb").exists()


@pytest.mark.parametrize(
    "name", ["../../../secret.csv", "/etc/passwd", "../..", "../../..", "a\\b.csv"]
)
async def test_relative_escapes_are_refused(api: Api, project: Path, name: str) -> None:
    code, answer = await api.call("POST", "workflows", body=_body([name]))
    assert code == 400, answer
    assert answer["code"] == "bad_path", answer
    assert not (project / "a.ipynb").exists()


async def test_a_relative_symlink_out_of_the_root_is_forbidden(
    api: Api, project: Path, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.csv").write_text("s\n1\n")
    os.symlink(outside, project / "link")
    code, answer = await api.call("POST", "workflows", body=_body(["link/secret.csv"]))
    assert code == 403, answer
    assert answer["code"] == "forbidden_path"
    assert str(tmp_path) not in answer["message"]
    assert str(root) not in answer["message"]


async def test_an_unknown_base_is_400(api: Api, project: Path) -> None:
    code, answer = await api.call(
        "POST", "workflows", body=_body(["data/train.csv"], files_relative_to="home")
    )
    assert code == 400, answer
    assert "/files_relative_to" in answer["message"]


async def test_a_blueprint_and_input_files_typed_side_by_side_resolve_from_one_folder(
    api: Api, project: Path, root: Path
) -> None:
    """The start form names every path from the notebook's folder: a blueprint beside the
    notebook is ``workflow.yaml``, as its data is ``data/train.csv``."""
    shutil.copy(root / "blueprints" / "quick.yaml", project / "workflow.yaml")
    (root / "workflow.yaml").write_text("not: a blueprint\n")  # the root's must not be read
    body = _body(
        ["data/train.csv"],
        planner={"kind": "blueprint", "path": "workflow.yaml"},
        planner_paths_relative_to="notebook",
    )
    code, snapshot = await api.call("POST", "workflows", body=body)
    assert code == 201, snapshot
    assert snapshot["files"] == ["data/train.csv"]
    # the blueprint beside the notebook was loaded, not the root's workflow.yaml
    assert snapshot["planner"]["settings"]["path"] == str(project / "workflow.yaml")
    await api.wait_status(snapshot["workflow_id"], "completed", "failed")


async def test_a_missing_blueprint_names_the_field_what_was_typed_and_where_it_looked(
    api: Api, project: Path, root: Path
) -> None:
    body = _body(
        [],
        planner={"kind": "blueprint", "path": "../nope.yaml"},
        planner_paths_relative_to="notebook",
    )
    code, answer = await api.call("POST", "workflows", body=body)
    assert code == 400, answer
    assert answer["message"] == (
        "planner.path: no such file '../nope.yaml' (looked for 'proj/nope.yaml'); paths here "
        "are relative to the notebook's folder 'proj/nb'"
    )
    assert answer["details"] == {"field": "planner.path", "path": "proj/nope.yaml"}
    assert str(root) not in answer["message"]
    assert not (project / "a.ipynb").exists()


async def test_a_relative_blueprint_path_still_may_not_leave_the_root(
    api: Api, project: Path
) -> None:
    body = _body(
        [],
        planner={"kind": "blueprint", "path": "../../../quick.yaml"},
        planner_paths_relative_to="notebook",
    )
    code, answer = await api.call("POST", "workflows", body=body)
    assert code == 400, answer
    assert answer["code"] == "bad_path", answer
